#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# The kernel matrix's guest (/init of its initramfs, busybox sh): runs tailprofd --check, starts
# tailprofd, runs the workloads with known answers, and writes what the host checks to the
# console: "KM KEY VALUE" lines, and files base64-encoded between "KM-BEGIN NAME" and "KM-END
# NAME". Then powers off. tests/kernels/matrix.py builds the image and reads the console.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /var/tmp
# A hybrid cgroup layout, as on this project's CI machines: the v1 name=systemd hierarchy beside
# the v2 one (systemd's mounts), everything from here on in name=systemd's km.scope (tailprofd too; its exec records name the
# scope by a walk of the process's css_set links, checked by check_cgroup in matrix.py).
mount -t tmpfs cgroup /sys/fs/cgroup 2>/dev/null
mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
if mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd; then
	mkdir -p /sys/fs/cgroup/systemd/km.scope
	echo $$ >/sys/fs/cgroup/systemd/km.scope/cgroup.procs
fi
ip link set lo up
API=http://127.0.0.1:7077

emit() { # NAME FILE
	echo "KM-BEGIN $1"
	base64 "$2"
	echo "KM-END $1"
}

fetch() { # NAME PATH
	if wget -q -O "/tmp/$1" "$API$2"; then
		emit "$1" "/tmp/$1"
	else
		echo "KM fetch-failed $1 $2"
	fi
}

off() { # power off (or, without ACPI, reboot: qemu -no-reboot exits either way)
	poweroff -f
	reboot -f
}

now() { cut -d. -f1 /proc/uptime; }

echo "KM uname $(uname -r)"
echo "KM nproc $(grep -c ^processor /proc/cpuinfo)"

t0=$(now)
# --check with the flags and config the daemon gets below
FLAGS="--window 1s --retention 10m --config /etc/tailprofd.conf $(cat /etc/tailprofd.flags 2>/dev/null)"
tailprofd --check $FLAGS >/tmp/check.txt 2>&1
echo "KM check-rc $?"
echo "KM check-seconds $(($(now) - t0))"
emit check /tmp/check.txt

t0=$(now)
# each set of maps the mmap records give checked against /proc on this kernel
TAILPROF_MAPS_RECORDS_CHECK=1 tailprofd $FLAGS >/tmp/daemon.log 2>&1 &
daemon=$!
healthy=""
while [ $(($(now) - t0)) -lt 240 ]; do
	if wget -q -O /dev/null "$API/healthz" 2>/dev/null; then
		healthy=$(($(now) - t0))
		break
	fi
	kill -0 $daemon 2>/dev/null || break
	sleep 1
done
echo "KM healthy-seconds ${healthy:-never}"
if [ -z "$healthy" ]; then
	emit daemon.log /tmp/daemon.log
	off
fi
fetch status.json /api/v1/status

# A first run loads the unwind tables of tp_offcpu and libc (several seconds under emulation): the
# checked run's first blocks then get their callers, as on a host where tables load in ms. The
# checked run waits 1 s in poll() before its measured sleeps: reading its maps and setting its
# tables took over 50 ms in guests of a busy host (its first sleep(1) cut, half its sleeps).
/wl/tp_offcpu 1 >/dev/null
# Phase 1 (6 s): a CPU-bound function, off-CPU sleeps, a stage, GC pauses (USDT). The GC
# stand-in starts first, alone until tailprofd has attached its probes: tailprofd attaches them in
# its main loop, which under emulation took 0.7-1.8 s, and tp_offcpu's tables then waited behind
# them (its sleeps walked before its tables: half or all of them cut, in 3 of 8 runs on
# 2026-12-07). On a host an attach takes milliseconds.
/wl/python3-gc-standin 8 >/tmp/gc.txt &
w3=$!
i=0
while [ $i -lt 20 ] && ! wget -q -O - "$API/api/v1/status" 2>/dev/null |
	grep -q '"state":"attached"'; do
	sleep 1
	i=$((i + 1))
done
echo "KM gc-attach-wait-seconds $i"
/wl/tp_hotcold 6 >/tmp/hotcold.pid &
w1=$!
/wl/tp_pipeline 6 /tmp/pipeline.log >/tmp/pipeline.pid &
w2=$!
/wl/tp_offcpu 3 1000 >/tmp/offcpu.txt
wait $w1 $w2 $w3
# Phase 2 (4 s): three hogs on CPU 1 wait for each other in its run queue.
echo "KM runq-from $(date +%s)"
taskset -c 1 /wl/tp_hotcold 4 >>/tmp/hogs.pid &
w1=$!
taskset -c 1 /wl/tp_hotcold 4 >>/tmp/hogs.pid &
w2=$!
taskset -c 1 /wl/tp_hotcold 4 >>/tmp/hogs.pid &
w3=$!
wait $w1 $w2 $w3
echo "KM runq-to $(date +%s)"
# Phase 3 (4 s): slow requests whose spans are accounted (a stage of their own).
/wl/tp_request 4 /tmp/request.log >/tmp/request.pid
# Phase 4 (4 s), on its own so as not to load the timed phases: GC pauses by uprobe and
# uretprobe, nested calls included.
/wl/python3.11-gc-uprobe-standin 4 >/tmp/gcup.txt
# Phase 5 (5 s): Debian's CPython 3.11 runs 3 ms in compute_features and 1 ms in serialize per
# round: the walker reads its Python frames.
if [ -x /usr/bin/python3.11 ]; then
	/usr/bin/python3.11 -I -S /wl/py_features.py 5 &
	echo $! >/tmp/py.pid
	wait $!
	# and a second process of it, given to the walker at its exec from the first's executable
	/usr/bin/python3.11 -I -S /wl/py_features.py 1 &
	echo $! >/tmp/py2.pid
	wait $!
fi
# Phase 6 (2 s): a static executable's layout, recorded at its first process, names the next
# two at their exec (no maps read); the second's unwind tables become the layout's, and the third
# gets its own at its exec (no wake-up).
/wl/tp_hotcold_static 0.5 >/dev/null
sleep 1
/wl/tp_hotcold_static 0.5 >/dev/null
/wl/tp_hotcold_static 0.5 >/dev/null
# Phase 7 (about 1 s): a forked child of this shell spins before it execs: its samples before the
# exec take its cgroups and PID namespace from its fork record, not from /proc.
(
	i=0
	while [ $i -lt 40000 ]; do i=$((i + 1)); done
	exec /wl/tp_hotcold 0.2 >/dev/null
) &
fk=$!
wait $fk
sleep 2 # two drains: everything that ended is in a window

for f in hotcold.pid pipeline.pid pipeline.log gc.txt gcup.txt offcpu.txt hogs.pid request.pid \
	request.log; do
	emit "$f" "/tmp/$f"
done
fetch cpu.pb.gz "/api/v1/profile?last=5m&pid=$(cat /tmp/hotcold.pid)"
fetch offcpu.pb.gz "/api/v1/profile?type=offcpu&last=5m&pid=$(head -1 /tmp/offcpu.txt)"
fetch stages.json "/api/v1/stages?last=10m"
fetch spans.json "/api/v1/spans?stage=request&last=10m"
fetch gc.json "/api/v1/gc?last=10m&pid=$(head -1 /tmp/gc.txt)"
fetch gcup.json "/api/v1/gc?last=10m&pid=$(head -1 /tmp/gcup.txt)"
fetch py.pb.gz "/api/v1/profile?last=5m&pid=$(cat /tmp/py.pid)"
fetch py2.pb.gz "/api/v1/profile?last=5m&pid=$(cat /tmp/py2.pid)"
fetch fork.pb.gz "/api/v1/profile?last=5m&pid=$fk"
fetch windows.json "/api/v1/windows?last=10m"
fetch metrics.txt /metrics
fetch status-after.json /api/v1/status
kill $daemon
# Not gone in 30 s: its threads' kernel stacks and every CPU's backtrace (sysrq l, printed past
# the quiet loglevel) go to the console, and the daemon's log with them, before waiting on.
i=0
while [ $i -lt 30 ] && [ "$(cut -d' ' -f3 /proc/$daemon/stat 2>/dev/null)" != Z ] &&
	[ -e /proc/$daemon ]; do
	sleep 1
	i=$((i + 1))
done
if [ $i -ge 30 ]; then
	echo "KM daemon-stuck 30"
	for t in /proc/$daemon/task/*; do
		echo "== thread $(basename $t) $(cat $t/comm) state $(cut -d' ' -f3 $t/stat)"
		cat $t/stack
	done >/tmp/stuck.txt 2>&1
	emit stuck.txt /tmp/stuck.txt
	emit daemon.log /tmp/daemon.log
	echo 7 >/proc/sys/kernel/printk
	echo l >/proc/sysrq-trigger
fi
wait $daemon
echo "KM daemon-rc $?"
emit daemon.log /tmp/daemon.log
echo "KM done"
off
