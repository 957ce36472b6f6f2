/* SPDX-License-Identifier: MIT */
/*
 * What kkctl's main (tools/kkctl.c, record.c) gives the record files a test
 * builds in without it: its name for messages, and no signal ever came.
 */
#ifndef KK_TEST_RECORD_STUBS_H
#define KK_TEST_RECORD_STUBS_H

#include <stdbool.h>

const char kkctl_prog[] = "kkctl";
bool kkr_hurried(void) { return false; }	/* no second signal here */
bool kkr_signalled(void) { return false; }	/* nor a first */

#endif
