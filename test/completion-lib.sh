# SPDX-License-Identifier: MIT
# The bash completion driven as bash drives it, for the kkctl_completion*
# scripts: sourced after B, SRC and tmp are set (and `command -v bash`
# checked).  Offers:
#   complete WORDS...   the candidates _kkctl gives for the last word of
#                       WORDS, one per line (a fresh bash each time, with
#                       $B first in PATH: the kkctl it runs is the build's)
cat > "$tmp/c.bash" <<EOS
PATH=$B:\$PATH
. "$SRC/tools/kkctl.bash-completion"
COMP_WORDS=("\$@"); COMP_CWORD=\$((\$# - 1))
_kkctl
printf '%s\n' "\${COMPREPLY[@]}"
EOS
complete() { bash --norc --noprofile "$tmp/c.bash" "$@"; }
