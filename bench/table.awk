# bench/table.awk: the tables the bench scripts print. Input: tab-separated
# records "R <metric> <repetition> <value>"; a value that is not a finite
# number (perftest printed "inf" once) counts as a failed run, which the
# runs column shows. A script adds its own END block that calls rowhead()
# and row(), then ratiohead() and ratio():
# awk -F'\t' -f bench/table.awk -f /dev/stdin results <<'EOF' ...
$1 == "R" && $4 ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ { v[$2] = v[$2] " " $4; n[$2]++ }

# stats sets med, lo, hi and cnt of metric k.
function stats(k,   a, m, i, j, t) {
	m = split(substr(v[k], 2), a, " ")
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	med[k] = (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	lo[k] = a[1]; hi[k] = a[m]; cnt[k] = m
}

# rowhead prints the head of the table of row()s.
function rowhead() {
	print "| measurement | tool | median (min–max) | runs |"
	print "|---|---|---|---|"
}

# ratiohead prints a blank line and the head of the table of ratio()s.
function ratiohead() {
	print ""
	print "| ratio of the medians | value |"
	print "|---|---|"
}

# row prints metric k as "| what | tool | median (min–max) | runs |".
function row(k, what, tool) {
	if (!(k in v)) { printf "| %s | %s | — (not run) | |\n", what, tool; return }
	stats(k)
	printf "| %s | %s | %.4g (%.4g–%.4g) | %d |\n", what, tool, med[k], lo[k], hi[k], cnt[k]
}

# ratio prints the ratio of the medians of a and b (row() them first).
function ratio(a, b, what) {
	if (!(a in med) || !(b in med) || med[b] == 0) { printf "| %s | — |\n", what; return }
	printf "| %s | **%.2f×** |\n", what, med[a] / med[b]
}
