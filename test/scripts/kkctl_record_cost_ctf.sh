#!/bin/sh
# SPDX-License-Identifier: MIT
# What kkctl record --format ctf spends per record, in instructions
# (script/kkctl_record_cost.sh's measure, with the ctf writer): the raw path
# (issue 39; docs/tracing.md, "The raw stream") checks a record's length and
# class and rewrites its class id and time, and writes whole frames: a bound
# of 300 instructions a record (it spends about 140), where the json path spent 14,627 (the
# endpoint's JSON parsed, the record merged and encoded again).
# KKCTL_RECORD_RAW=0 measures the json path (with KK_RECORD_COST_MAX set).
KK_RECORD_COST_FORMAT=ctf KK_RECORD_COST_MAX=${KK_RECORD_COST_MAX:-300} \
	exec sh "${KK_SRC:?}/test/scripts/kkctl_record_cost.sh"
