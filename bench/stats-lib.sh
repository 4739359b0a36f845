# stats-lib.sh — sourced by the bench scripts: the summaries they print
# over a list of figures ("X Y Z", one per run).  One copy, so that every
# bench takes its median the same way.

# median "X Y Z": the median of the numbers; "null" when there are none.
median() {
    printf '%s\n' $1 | awk 'NF { a[n++] = $1 }
        END { if (n == 0) { print "null"; exit }
              for (i = 1; i < n; i++)   # insertion sort: n is small
                  for (j = i; j > 0 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
              if (n % 2) printf "%.6g\n", a[(n-1)/2]
              else printf "%.6g\n", (a[n/2-1] + a[n/2]) / 2 }'
}
# spread "X Y Z": slowest over fastest (max / min); "null" when none or 0.
spread() {
    printf '%s\n' $1 | awk 'NF { if (n == 0 || $1 < lo) lo = $1; if ($1 > hi) hi = $1; n++ }
        END { if (n == 0 || lo == 0) print "null"; else printf "%.3f\n", hi / lo }'
}
# ratio A B: A / B to 3 places; "null" when either is null or B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else printf "%.3f\n", a / b }'; }
# list "X Y Z": "X,Y,Z" (a JSON array's inside).
list() { printf '%s\n' $1 | paste -s -d, -; }
# field JSON KEY: the number after "KEY": in one JSON line ("" if absent).
field() {
    printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([-+.0-9eE]*\).*/\1/p" | head -n 1
}
# JF_AWK: awk's jf(LINE, KEY), the raw value after "KEY": in one flat JSON
# line (a number, true/false, or a string with its quotes; "" if absent;
# python's "KEY": VALUE spacing too),
# for the summaries written in awk: awk "$JF_AWK"' { x = jf($0, "us") }'
JF_AWK='function jf(s, k,   v) {
    if (!match(s, "\"" k "\": *(\"[^\"]*\"|[^,}]*)")) return ""
    v = substr(s, RSTART, RLENGTH)
    sub(/^"[^"]*": */, "", v)
    return v
}
'
