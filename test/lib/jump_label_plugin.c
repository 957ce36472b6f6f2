// SPDX-License-Identifier: MIT
/* A plugin for unit/jump_label_export: it exports its own key as
 * "plugin_flag" when loaded, and tries to export a second key under a
 * name the test program may hold already ("dup_flag"). */
#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(jl_export_plugin_key);
DEFINE_STATIC_KEY_FALSE(jl_export_plugin_dup);

int jl_export_ret = 1, jl_export_dup_ret = 1;

__attribute__((constructor)) static void jl_export_plugin_init(void)
{
	jl_export_ret = kk_static_branch_export(&jl_export_plugin_key, "plugin_flag");
	jl_export_dup_ret = kk_static_branch_export(&jl_export_plugin_dup, "dup_flag");
}

__attribute__((noinline)) int jl_export_plugin_site(void)
{
	return static_branch_unlikely(&jl_export_plugin_key);
}
