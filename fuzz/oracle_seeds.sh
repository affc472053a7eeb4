#!/bin/sh
# Seeds for the oracle_exec fuzz target: each command the attack files expect `allow`, one
# file per row (KIND<TAB>ACCEPT<TAB>COMMAND; @HOME@/@WS@ are filled in by the target).
# Usage, from the repo root: fuzz/oracle_seeds.sh [DIR]   (default fuzz/corpus/oracle_exec)
set -eu
out=${1:-fuzz/corpus/oracle_exec}
mkdir -p "$out"
for f in tests/data/attacks/*.tsv; do
    awk -F'\t' -v out="$out" -v base="$(basename "$f" .tsv)" '
        !/^#/ && NF >= 3 && $2 ~ /(^|,)allow(,|$)/ {
            name = out "/" base "-" FNR
            printf "%s", $3 > name
            close(name)
        }' "$f"
done
echo "$(ls "$out" | wc -l) seeds in $out"
