/* SPDX-License-Identifier: MIT */
/*
 * A printf conversion as the trace ring records it (trace.c packs by it,
 * trace_json.c and trace_raw.c describe its value by it), and as kkctl
 * reads a format back (tools/kkctl/record_rawdec.c makes a record's message
 * from a trace_pipe_raw class's format): pure functions over strings, linked
 * into both.
 */
#ifndef KK_DD_PRINTF_CONV_H
#define KK_DD_PRINTF_CONV_H

enum { LM_NONE, LM_HH, LM_H, LM_L, LM_LL, LM_J, LM_Z, LM_T, LM_BIGL };

struct conv {
	const char *start;		/* the '%' */
	const char *end;		/* after the conversion character */
	char flags[8];
	int width, prec;		/* -1 none, -2 '*' */
	int lmod;
	char c;				/* 0: not one we handle */
};

/* Parse the conversion at @p (a '%').  c = 0 for what we do not record. */
const char *kk_dd_tr_parse_conv(const char *p, struct conv *cv);

#endif
