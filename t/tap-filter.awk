# SPDX-License-Identifier: Apache-2.0
# Reads the harness's -verbose output. mode=console (the default) prints
# it as the harness prints it without -verbose (one line per test file),
# and for each failed test also the comments before it (Apache::TestUtil's
# t_cmp says what it expected and received before its "not ok") and after
# it (Test::More's diagnostics). mode=failures prints only those, under
# their file's name: the summary that t/run repeats at the end of a run.
function flush_header() {
    if (header != "") {
        printf "%s\n", header
        header = ""
    }
}
BEGIN { mode = mode == "" ? "console" : mode }
/^t\/.*\.t \.+ ?$/ {
    file = $1; header = $0; n = 0; after = 0; infile = 1
    next
}
infile && /^1\.\.[0-9]+/ { next }
infile && /^[ \t]*#/ {
    if (after) {
        print
    }
    else {
        buf[n % 40] = $0
        n++
    }
    next
}
infile && /^ok [0-9]/ { n = 0; after = 0; next }
infile && /^not ok [0-9]/ {
    if (mode == "failures") {
        print "--- " file
    }
    else {
        flush_header()
    }
    for (i = (n > 40 ? n - 40 : 0); i < n; i++) {
        print buf[i % 40]
    }
    print
    n = 0; after = 1
    fflush()
    next
}
infile && (/^ok$/ || /^skipped/) {
    infile = 0
    if (mode == "console") {
        if (header != "") {
            printf "%s%s\n", header, $0
            header = ""
        }
        else {
            print
        }
        fflush()
    }
    next
}
{
    infile = infile && !/^(Dubious|Failed [0-9]+\/|All [0-9]+ subtests)/
    if (mode == "console") {
        flush_header()
        print
        fflush()
    }
    else if (/^(Dubious|Failed [0-9]+\/[0-9]+ subtests)/) {
        print "--- " file ": " $0
    }
}
