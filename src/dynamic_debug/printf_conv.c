// SPDX-License-Identifier: MIT
/*
 * The parse of one printf conversion (printf_conv.h): the library's trace
 * ring and kkctl's raw decoder read formats by this one parser.
 */
#include <string.h>

#include "dynamic_debug/printf_conv.h"

/* Flag characters, kept in order for the literal format (up to 7). */
static const char *conv_flags(const char *p, struct conv *cv)
{
	size_t nf = 0;

	for (; *p && strchr("-+ #0'I", *p); p++)
		if (nf < sizeof(cv->flags) - 1)
			cv->flags[nf++] = *p;
	cv->flags[nf] = '\0';
	return p;
}

/* Decimal digits into *v (from 0); stops growing at 100000 so a long run cannot overflow. */
static const char *conv_digits(const char *p, int *v)
{
	*v = 0;
	while (*p >= '0' && *p <= '9') {
		if (*v < 100000)
			*v = *v * 10 + (*p - '0');
		p++;
	}
	return p;
}

/* Length modifiers, longest match first ("hh" before "h"); 'Z' is glibc's old 'z'. */
static const struct {
	char text[3];
	int lmod;
} conv_lmods[] = {
	{ "hh", LM_HH }, { "h", LM_H }, { "ll", LM_LL }, { "l", LM_L }, { "q", LM_LL },
	{ "j", LM_J }, { "z", LM_Z }, { "Z", LM_Z }, { "t", LM_T }, { "L", LM_BIGL },
};

static const char *conv_lmod(const char *p, struct conv *cv)
{
	for (size_t i = 0; i < sizeof(conv_lmods) / sizeof(conv_lmods[0]); i++) {
		const char *t = conv_lmods[i].text;

		if (p[0] == t[0] && (!t[1] || p[1] == t[1])) {
			cv->lmod = conv_lmods[i].lmod;
			return p + (t[1] ? 2 : 1);
		}
	}
	return p;
}

/* Parse the conversion at @p (a '%').  c = 0 for what we do not record. */
const char *kk_dd_tr_parse_conv(const char *p, struct conv *cv)
{
	cv->start = p++;
	cv->width = cv->prec = -1;
	cv->lmod = LM_NONE;
	cv->c = 0;
	p = conv_flags(p, cv);
	if (*p == '*') {
		cv->width = -2;
		p++;
	} else if (*p >= '0' && *p <= '9') {
		p = conv_digits(p, &cv->width);
		if (*p == '$') {	/* positional arguments: not recorded */
			cv->end = p + 1;
			return cv->end;
		}
	}
	if (*p == '.') {
		p++;
		if (*p == '*') {
			cv->prec = -2;
			p++;
		} else {
			p = conv_digits(p, &cv->prec);
		}
	}
	p = conv_lmod(p, cv);
	if (*p && strchr("diouxXcspfFeEgGaAnm%", *p))
		cv->c = *p;
	/* wide characters and strings: not recorded (%lc formats by locale) */
	if ((cv->c == 's' || cv->c == 'c') && cv->lmod != LM_NONE)
		cv->c = 0;
	cv->end = *p ? p + 1 : p;
	return cv->end;
}
