// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the dynamic-debug query parser (src/dynamic_debug/query.c).
 * Properties checked besides "no crash, no sanitizer report":
 *  - a block either parses, or fails with -EINVAL and an error message;
 *  - escape then unescape gives back the original string;
 *  - a listing line built from a site whose format is the input parses back
 *    and matches exactly that site.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug/query.h"

static const struct ddebug_site sites[] = {
	{ "drm", "drivers/gpu/drm/drm_probe.c", "drivers/gpu/drm/drm_probe.c", "drm_probe_0",
	  "%s: state %d\n", 12 },
	{ "virtio", "/src/drivers/virtio/virtio_ring.c", "drivers/virtio/virtio_ring.c",
	  "virtqueue_add", "\"quoted\"\t%p\n", 400 },
	{ "i915", "i915_gem.c", "i915_gem.c", "i915_gem_flush", "", 1 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ddebug_block b;
	struct ddebug_msgs m = { 0 };
	const char *mod = (size && (data[0] & 1)) ? "modp" : NULL;
	int ret = ddebug_parse_block((const char *)data, size, mod, &b, &m, NULL);

	if (ret == 0) {
		for (size_t i = 0; i < b.n; i++) {
			char fl[16];

			ddebug_flags_str(b.q[i].flags, fl);
			for (size_t s = 0; s < sizeof(sites) / sizeof(sites[0]); s++)
				(void)ddebug_match(&b.q[i], &sites[s]);
		}
		ddebug_block_free(&b);
	} else if (ret == -EINVAL) {
		if (!m.len)
			abort();	/* every rejection says why */
	} else if (ret != -ENOMEM) {
		abort();
	}
	ddebug_msgs_free(&m);

	/* escape / unescape round trip on the input as a C string */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	size_t need = ddebug_escape(s, NULL, 0) + 1;
	char *e = malloc(need);
	if (!e) {
		free(s);
		return 0;
	}
	ddebug_escape(s, e, need);
	char *u = strdup(e);
	ddebug_unescape(u);
	if (strcmp(u, s))
		abort();

	/* a listing line with this format parses back to an exact match */
	size_t ll = need + 128;
	char *line = malloc(ll);
	snprintf(line, ll, "drivers/x.c:7 [modx]fn_x =pmf \"%s\"\n", e);
	memset(&m, 0, sizeof(m));
	if (ddebug_parse_block(line, strlen(line), NULL, &b, &m, NULL) != 0 || b.n != 1 ||
	    !b.q[0].exact)
		abort();
	struct ddebug_site site = { "modx", "drivers/x.c", "drivers/x.c", "fn_x", s, 7 };
	if (!ddebug_match(&b.q[0], &site))
		abort();
	ddebug_block_free(&b);
	ddebug_msgs_free(&m);
	free(line);
	free(u);
	free(e);
	free(s);
	return 0;
}
