# Doxygen input filter for the guides in docs/ (FILTER_PATTERNS in docs/Doxyfile.in).
#
# The guides are written for GitHub, which gives every heading an anchor (`## 4. What it costs`
# -> `#4-what-it-costs`) and resolves links such as `[x](#random-numbers)` or
# `[x](extending.md#4-what-it-costs)`. Doxygen 1.9.4 does neither: its labels are global,
# explicit (`{#label}`) and must start with a letter. This filter, run by doxygen on each page:
#   - appends `{#<page>-<github-slug>}` to every heading below the title (level 2 and deeper)
#     that has no label yet, <page> being the file's path under docs/ without `.md`, `/` -> `_`
#     (`design/layer_stack.md` -> `design_layer_stack`), and repeated headings numbered as GitHub
#     numbers them (`-1`, `-2`, ...);
#   - rewrites `](#frag)` and `](other.md#frag)` links between guides to `](#<page>-frag)`,
#     which doxygen turns into a reference to that label;
#   - writes an apostrophe inside an inline code span as `&apos;`: doxygen 1.9.4 otherwise pairs
#     the backtick with the apostrophe as a `quote' (`no 'shape' key` came out as
#     "‘no 'shape’ key`", and `member '<name>'` as a quote followed by an unknown HTML tag).
# Fenced code blocks are left alone, and the number of lines is kept, so doxygen's warnings point
# at the right line of the guide. Plain POSIX awk (Debian's mawk is enough).

function page_of(path,    p) {
  p = path
  sub(/.*\/docs\//, "", p)  # the path under the last docs/ directory
  sub(/\.md$/, "", p)
  gsub(/\//, "_", p)
  return p
}

function slug(text,    s) {  # GitHub's heading anchor, for ASCII headings
  s = tolower(text)
  gsub(/[^a-z0-9 _-]/, "", s)
  gsub(/ /, "-", s)
  return s
}

# The page a link target `file.md` (relative to this page's directory) or `` (this page) names;
# "" for a file outside docs/ (README.md), whose links are left as they are.
function target_page(target,    dir, t) {
  if (target == "") return page
  t = target
  dir = rel
  if (dir ~ /\//) sub(/\/[^\/]*$/, "", dir); else dir = ""
  while (t ~ /^\.\.\//) {
    if (dir == "") return ""
    sub(/^\.\.\//, "", t)
    if (dir ~ /\//) sub(/\/[^\/]*$/, "", dir); else dir = ""
  }
  sub(/^\.\//, "", t)
  if (dir != "") t = dir "/" t
  return page_of("/docs/" t)
}

function rewrite_links(line,    out, link, target, frag, hash, tp) {
  out = ""
  # `](target.md#frag)` or `](#frag)`, target a relative path to another guide
  while (match(line, /\]\(([A-Za-z0-9_.\/-]*\.md)?#[A-Za-z0-9_-]+\)/)) {
    link = substr(line, RSTART + 2, RLENGTH - 3)  # between `](` and `)`
    hash = index(link, "#")
    target = substr(link, 1, hash - 1)
    frag = substr(link, hash + 1)
    tp = target ~ /^(\/|[a-z]+:)/ ? "" : target_page(target)  # absolute or a URL: not a guide
    if (tp == "") out = out substr(line, 1, RSTART + RLENGTH - 1)
    else out = out substr(line, 1, RSTART - 1) "](#" tp "-" frag ")"
    line = substr(line, RSTART + RLENGTH)
  }
  return out line
}

# Apostrophes inside inline code spans (a run of n backticks up to the next run of n) become
# `&apos;`, which doxygen prints as an apostrophe. Spans are matched within one line.
function escape_code_apostrophes(line,    out, i, n, c, run, open) {
  out = ""
  open = 0
  n = length(line)
  i = 1
  while (i <= n) {
    c = substr(line, i, 1)
    if (c == "`") {
      run = 0
      while (i <= n && substr(line, i, 1) == "`") { run++; i++ }
      if (open == 0) open = run; else if (open == run) open = 0
      out = out substr(line, i - run, run)
      continue
    }
    out = out ((open && c == "'") ? "&apos;" : c)
    i++
  }
  return out
}

BEGIN { fence = "" }

FNR == 1 {
  rel = FILENAME
  sub(/.*\/docs\//, "", rel)
  page = page_of(FILENAME)
  fence = ""
  split("", seen)
}

{
  line = $0
  if (fence != "") {  # inside a fenced code block: copy as is
    if (line ~ ("^[ ]*" fence)) fence = ""
    print line
    next
  }
  if (line ~ /^[ ]*```/) { fence = "```"; print line; next }
  if (line ~ /^[ ]*~~~/) { fence = "~~~"; print line; next }

  if (line ~ /^##+[ ]/ && line !~ /\{#[^}]*\}[ ]*$/) {
    text = line
    sub(/^#+[ ]+/, "", text)
    sub(/[ ]+#+[ ]*$/, "", text)  # closing hashes
    sub(/[ ]+$/, "", text)
    s = slug(text)
    if (s in seen) { seen[s]++; s = s "-" seen[s] } else seen[s] = 0
    sub(/[ ]+$/, "", line)
    line = line " {#" page "-" s "}"
  }
  if (index(line, "`") && index(line, "'")) line = escape_code_apostrophes(line)
  print rewrite_links(line)
}
