import re, subprocess, sys
# Parse GNU-style --help into (short, long, arg) triples. arg: No | Req | Opt
LONG = re.compile(r'--([A-Za-z0-9][\w.-]*)(\[=[^\]]*\]|\[=\][^\s,]+|=\S+|\s<[^>]+>(?:\.\.\.)?|\s[A-Z][A-Z0-9_]*\b|\s\[\S*)?')
SHORT = re.compile(r'(?<![\w-])-([A-Za-z0-9#.])(\[[^\]]+\]|\s+(?:<[^>]+>|[A-Z][A-Z0-9_]*\b|#))?')
def kind(spec):
    if not spec: return 'No'
    if spec.startswith('[=]'): return 'Req'
    if spec.startswith('['): return 'Opt'
    return 'Req'
def parse(text):
    out = []
    for line in text.splitlines():
        line = re.sub(r'^(\s+-\S+,)\s+--', r'\1 --', line)
        m = re.match(r'^\s{1,8}(-.*?)(?:\s{2,}|\t|$)', line)
        if not m: continue
        head = m.group(1)
        if head.startswith('---'): continue
        shorts, longs = [], []
        rest = head
        for lm in LONG.finditer(head):
            longs.append((lm.group(1), kind(lm.group(2))))
        rest = LONG.sub('', head)
        for sm in SHORT.finditer(rest):
            shorts.append((sm.group(1), kind(sm.group(2))))
        if not shorts and not longs: continue
        out.append((shorts, longs, head))
    return out
def emit(name, text):
    rows = []
    for shorts, longs, head in parse(text):
        s0 = shorts[0] if shorts else None
        l0 = longs[0] if longs else None
        if s0 and l0:
            fixed = re.search(r'--' + re.escape(l0[0]) + r'=[a-z]', head) is not None
            sk = s0[1] if s0[1] != 'No' else (l0[1] if l0[1] == 'Req' and not fixed else 'No')
            if sk == l0[1]:
                rows.append((s0[0], l0[0], sk, sk, head))
            else:
                rows.append((s0[0], '', sk, sk, head))
                rows.append(('\\0', l0[0], l0[1], l0[1], head))
        elif s0:
            rows.append((s0[0], '', s0[1], s0[1], head))
        else:
            rows.append(('\\0', l0[0], l0[1], l0[1], head))
        for s in shorts[1:]:
            rows.append((s[0], '', s[1] if s[1] != 'No' else rows[-1][3], s[1], head))
        for l in longs[1:]:
            rows.append(('\\0', l[0], l[1], l[1], head))
    return rows
if __name__ == '__main__':
    prog = sys.argv[1]
    text = subprocess.run(sys.argv[1:] + ['--help'], capture_output=True, text=True).stdout
    for r in emit(prog, text):
        print(r)
