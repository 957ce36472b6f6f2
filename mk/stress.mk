# SPDX-License-Identifier: MIT
# jump_label_signal is jump_label_stress.c built again with other defaults.
$(B)/test/stress/jump_label_signal: test/stress/jump_label_stress.c
