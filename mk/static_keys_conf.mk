# SPDX-License-Identifier: MIT
# Static-key conformance: test_static_keys uses the keys of a second module,
# libstatic_key_base.so (test/conformance/libstatic_key_base.c).
CONF_LDLIBS_test_static_keys := -lstatic_key_base
