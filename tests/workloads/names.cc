// SPDX-License-Identifier: GPL-2.0-only
/* Known answer for demangling: CPU time in a function of an anonymous namespace, a member of a
 * class template, and two functions carrying the symbols rustc 1.95 gives
 * mycrate::scheme::legacy::function and mycrate::scheme::v0::function (as asm labels).
 * Usage: tp_names [SECONDS] */
#include <cstdio>
#include <unistd.h>

#include "workload.h"

namespace {
__attribute__((noinline)) void spin_here(int ms)
{
	BURN_NS((uint64_t)ms * 1000000);
}
} // namespace

namespace ns {
template <typename T> struct Box {
	__attribute__((noinline)) void churn(T ms)
	{
		BURN_NS((uint64_t)ms * 1000000);
	}
};
template struct Box<long>;
} // namespace ns

extern "C" {
void rust_legacy(int) __asm__("_ZN7mycrate6scheme6legacy8function17hbe6eccdd43e1e80bE");
void rust_v0(int) __asm__("_RNvNtNtCs9ouqcdLKNTu_7mycrate6scheme2v08function");
__attribute__((noinline)) void rust_legacy(int ms)
{
	BURN_NS((uint64_t)ms * 1000000);
}
__attribute__((noinline)) void rust_v0(int ms)
{
	BURN_NS((uint64_t)ms * 1000000);
}
}

int main(int argc, char **argv)
{
	uint64_t end = now_ns() + (uint64_t)(arg_seconds(argc, argv, 1, 2) * 1e9);
	ns::Box<long> box;

	printf("%d\n", getpid());
	fflush(stdout);
	while (now_ns() < end) {
		spin_here(2);
		box.churn(2);
		rust_legacy(2);
		rust_v0(2);
	}
	return 0;
}
