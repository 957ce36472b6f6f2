// SPDX-License-Identifier: MIT
/*
 * jump_label_stress with a program signal handler that runs sites
 * (KK_STRESS_SIGNALS=1 by default) and 20000 toggles: see that file.
 * Issue 10: a SIGUSR1 handler that lands on top of the library's SIGTRAP
 * handler and runs a site in flight must not kill the process.
 */
#define JL_STRESS_SIGNALS 1
#define JL_STRESS_TOGGLES 20000
#include "jump_label_stress.c"
