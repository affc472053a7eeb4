"""Generates the option tables of gram_text.rs, gram_list.rs and gram_search.rs from the
installed programs' --help (GNU layout), with the reviewed effects in OV. Usage:

    python3 grammar-gen.py cat tac head ... > /tmp/gram_text.rs

Then apply the reviewed fix-ups the help text cannot express, and diff against the file:
  * diff's --GTYPE-group-format / --LTYPE-line-format expand to old/new/unchanged/changed;
  * numeric: true for head, tail, grep, fmt, pr, expand, unexpand (`-5` style counts);
  * sort: -c and -C are flags, --check takes an optional attached value;
  * stat: -c is --format (Req); file: -P takes a value; curl: -h/--help is a flag,
    --parallel is listed once; wget: --max-redirect and --hsts-file take values, -n takes
    its letters (-nv, -nc) as a value.
An option missing from a table is gated, so an incomplete table is safe; a flag listed as
taking a value would hide the next word from the path checks, so review every `Req`.
"""
import subprocess, sys
from help_parse import emit
# program -> (static name, extra argv to get help)
G = 'Gate'
OV = {
 'wc': {'files0-from': 'ReadList("reads the names of the files to count from a file")'},
 'du': {'files0-from': 'ReadList("reads the names of the files to measure from a file")', 'exclude-from': 'Read', 'X': 'Read'},
 'sort': {'random-source': 'Read', 'compress-program': 'Exec', 'files0-from': 'ReadList("reads the names of the files to sort from a file")',
          'output': 'Write', 'o': 'Write', 'temporary-directory': 'Write', 'T': 'Write'},
 'diff': {'exclude-from': 'Read', 'X': 'Read', 'from-file': 'Read', 'to-file': 'Read',
          'paginate': 'Gate(Category::RunCode, "runs `pr` on the output")', 'l': 'Gate(Category::RunCode, "runs `pr` on the output")',
          'recursive': 'Check', 'r': 'Check'},
 'diff3': {'diff-program': 'Exec'},
 'cksum': {'check': 'Check', 'c': 'Check'},
 'shuf': {'output': 'Write', 'o': 'Write', 'random-source': 'Read', 'echo': 'Check', 'e': 'Check', 'input-range': 'Check', 'i': 'Check'},
 'split': {'filter': 'Exec'},
 'date': {'file': 'ReadList("reads dates from a file and echoes bad lines")', 'f': 'ReadList("reads dates from a file and echoes bad lines")',
          'reference': 'Read', 'r': 'Read',
          'set': 'Gate(Category::Privilege, "sets the system clock")', 's': 'Gate(Category::Privilege, "sets the system clock")'},
 'grep': {'file': 'Read', 'f': 'Read', 'exclude-from': 'Read', 'directories': 'Check', 'd': 'Check',
          'devices': 'Check', 'D': 'Check', 'recursive': 'Check', 'r': 'Check', 'dereference-recursive': 'Check', 'R': 'Check'},
 'sed': {'file': 'Check', 'f': 'Check', 'in-place': 'Check', 'i': 'Check', 'expression': 'Check', 'e': 'Check'},
 'iconv': {'output': 'Write', 'o': 'Write'},
 'file': {'files-from': 'ReadList("reads the names of the files to examine from a file")', 'f': 'ReadList("reads the names of the files to examine from a file")',
          'magic-file': 'Read', 'm': 'Read', 'compile': 'Gate(Category::Write, "compiles a magic file")', 'C': 'Gate(Category::Write, "compiles a magic file")',
          'preserve-date': 'Gate(Category::Write, "resets file access times")', 'p': 'Gate(Category::Write, "resets file access times")',
          'uncompress': 'Gate(Category::RunCode, "runs decompressors")', 'z': 'Gate(Category::RunCode, "runs decompressors")',
          'uncompress-noreport': 'Gate(Category::RunCode, "runs decompressors")', 'Z': 'Gate(Category::RunCode, "runs decompressors")',
          'no-sandbox': 'Gate(Category::RunCode, "turns its sandbox off")', 'S': 'Gate(Category::RunCode, "turns its sandbox off")'},
 'rg': {'pre': 'Exec', 'search-zip': 'Gate(Category::RunCode, "runs decompression programs")', 'z': 'Gate(Category::RunCode, "runs decompression programs")',
        'follow': 'Check', 'L': 'Check', 'ignore-file': 'Read', 'file': 'Read', 'f': 'Read', 'hostname-bin': 'Exec'},
}
for s in ['md5sum','sha1sum','sha224sum','sha256sum','sha384sum','sha512sum','b2sum']:
    OV[s] = {'check': 'Check', 'c': 'Check'}
PROGS = sys.argv[1:]
def rs_char(c):
    return "'\\0'" if c in ('\\0', '\\\\0') else "'%s'" % c
out = []
for p in PROGS:
    text = subprocess.run([p, '--help'], capture_output=True, text=True).stdout
    rows = emit(p, text)
    seen = set()
    name = 'G_' + p.upper().replace('-', '_')
    numeric = any(h.startswith('-NUM') or ', -NUM' in h for *_, h in rows)
    out.append('/// `%s` (from `%s --help`).' % (p, p))
    out.append('#[rustfmt::skip]')
    out.append('pub(super) static %s: Grammar = Grammar { permute: true, numeric: %s, opts: &[' % (name, 'true' if numeric else 'false'))
    for s, l, arg, _, head in rows:
        if head.startswith('-NUM') or s == '?' :
            continue
        key = (s, l)
        if key in seen: continue
        seen.add(key)
        ov = OV.get(p, {})
        eff = ov.get(l) or ov.get(s if s not in ('\\0','\\\\0') else None) or 'Safe'
        out.append('    o(%s, "%s", %s, %s),' % (rs_char(s), l, arg, eff))
    out.append(']};')
    out.append('')
print('\n'.join(out))
