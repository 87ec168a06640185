// Placeholder until the web UI's bundle lands: shows GET /api/v1/status.
"use strict";
fetch("/api/v1/status")
  .then((r) => r.json())
  .then((s) => { document.getElementById("status").textContent = JSON.stringify(s, null, 2); })
  .catch((e) => { document.getElementById("status").textContent = "error: " + e; });
