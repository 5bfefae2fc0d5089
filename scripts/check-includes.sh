#!/usr/bin/env bash
# Fails when code includes a module or room that its README does not allow (docs/ARCHITECTURE.md §2).
# A unit is any directory under src/ with a README.md (a module such as `engine/`, or a room such as
# `fleet/etcd/`); its README has a paragraph starting "May include:" naming the allowed units in
# backticks (`util/`, `fleet/etcd/`; `fleet/` allows every room of it), up to a "Never" or "Must not".
# A file belongs to the deepest unit above it; an include belongs to the deepest unit its path names.
# A folder and the module it is in (`api/ollama/` and `api/`) may include each other.
#   scripts/check-includes.sh [SRC_DIR]
set -euo pipefail
src=${1:-src}
mapfile -t units < <(cd "$src" && find . -mindepth 2 -name README.md -printf '%h\n' | sed 's#^\./##' | sort)
# The deepest unit that `path` (relative to src) lies in; "" when none.
unit_of() {
    local best="" u
    for u in "${units[@]}"; do
        if [[ "$1" == "$u/"* ]] && [ ${#u} -gt ${#best} ]; then best=$u; fi
    done
    printf '%s' "$best"
}
fail=0
checked=0
for u in "${units[@]}"; do
    readme="$src/$u/README.md"
    allowed_text=$(awk '/^May include:/{on=1} on&&/^$/{exit} on{print}' "$readme" | tr '\n' ' ' | sed -E 's/(Never|Must not).*//')
    if [ -z "$allowed_text" ]; then
        echo "$readme: no 'May include:' paragraph"
        fail=1
        continue
    fi
    allowed=$(grep -oE '`[a-z_]+(/[a-z_]+)*/' <<<"$allowed_text" | tr -d '`' | sed 's#/$##' || true)
    while IFS= read -r file; do
        rel=${file#"$src"/}
        [ "$(unit_of "$rel")" = "$u" ] || continue   # a deeper unit's file: checked against its own README
        checked=$((checked + 1))
        while IFS= read -r hit; do
            path=$(sed -E 's/^([0-9]+):#include "([^"]+)".*/\2/' <<<"$hit")
            dep=$(unit_of "$path")
            [ -n "$dep" ] && [ "$dep" != "$u" ] || continue   # not one of ours, or its own
            [[ "$u" == "$dep/"* || "$dep" == "$u/"* ]] && continue   # within one module: a folder and its parent
            ok=0
            for a in $allowed; do
                if [ "$dep" = "$a" ] || [[ "$dep" == "$a/"* ]]; then ok=1; fi
            done
            if [ "$ok" = 0 ]; then
                echo "$file:${hit%%:*}: $u/ includes $dep/, which $readme does not allow"
                fail=1
            fi
        done < <(grep -nE '^#include "[a-z_]+/' "$file" || true)
    done < <(find "$src/$u" -type f \( -name '*.h' -o -name '*.cpp' \) | sort)
done
[ "$fail" = 0 ] && echo "every include is one its README allows (${#units[@]} modules and rooms, $checked files)"
exit "$fail"
