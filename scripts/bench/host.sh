#!/bin/bash
# One line naming the machine a benchmark's figures hold on: the CPU, its cores, the flags that decide
# whether bf16 can pay on it (AMX tiles make it faster; with AVX512-BF16 alone it was measured slower than
# fp32 on one CPU and faster on another, see hostcaps::cpu), and the tier Paddock reads from them. Figures
# without this line cannot be compared.
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { if grep -qw "$1" <<<"$flags"; then echo yes; else echo no; fi; }
tier=none
[ "$(has avx512_bf16)" = yes ] && tier=avx512_bf16
[ "$tier" != none ] && [ "$(has amx_bf16)" = yes ] && [ "$(has amx_tile)" = yes ] && tier=amx
echo "host: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) cores;" \
  "avx512_bf16 $(has avx512_bf16), amx_bf16 $(has amx_bf16), amx_tile $(has amx_tile): CPU bfloat16 tier $tier" \
  "${PADDOCK_HIDE_CAPABILITIES:+(PADDOCK_HIDE_CAPABILITIES=$PADDOCK_HIDE_CAPABILITIES)}"
