"""Labels a trace command as a read by an independent, conservative rule set (not the guard's):
every pipeline/list segment runs a read-only program, with no write redirection."""
import json, re, shlex, sys, collections
READ = {"cat","head","tail","grep","egrep","fgrep","rg","find","ls","wc","nl","sort","uniq","cut",
        "tr","echo","pwd","tree","file","stat","diff","less","more","awk","sed","git","xargs","basename",
        "dirname","realpath","readlink","du","true","printf","column","comm","cmp","md5sum","sha256sum","od","hexdump","strings","which","test","["}
GIT_READ = {"log","show","diff","status","grep","blame","ls-files","rev-parse","shortlog","describe","cat-file","ls-tree"}
def words(seg):
    try: return shlex.split(seg, posix=True)
    except ValueError: return None
def is_read(cmd):
    if "<<" in cmd or "`" in cmd or "$(" in cmd or "\n" in cmd.strip(): return False
    # writes: > or >> not to /dev/null (2>&1 ok)
    for m in re.finditer(r"(\d?)(>>?)(&?\s*)(\S+)", cmd):
        tgt = m.group(4)
        if m.group(3).startswith("&") and tgt[:1].isdigit(): continue
        if tgt == "/dev/null": continue
        return False
    segs = re.split(r"\s*(?:&&|\|\||;|\|)\s*", cmd.strip())
    for s in segs:
        if not s: continue
        w = words(s)
        if not w: return False
        while w and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w[0]): w = w[1:]
        if not w: return False
        p = w[0].split("/")[-1]
        if p == "cd": continue
        if p == "xargs":
            rest = [x for x in w[1:] if not x.startswith("-")]
            if not rest or rest[0] not in READ - {"xargs","sed","awk","git","find"}: return False
            continue
        if p not in READ: return False
        if p == "sed" and (any(x.startswith("-i") or x == "--in-place" for x in w) or not any(x in ("-n","-ne") for x in w)): return False
        if p == "find" and any(x in ("-exec","-execdir","-delete","-ok","-fprint","-fprintf","-fls") for x in w): return False
        if p == "awk" and ("system" in s or "print >" in s or "getline" in s): return False
        if p == "git":
            sub = [x for x in w[1:] if not x.startswith("-")]
            if not sub or sub[0] not in GIT_READ: return False
    return True
if __name__ == "__main__":
    cmds = json.load(open(sys.argv[1]))
    reads = [c for c in cmds if is_read(c["command"])]
    print(len(cmds), len(reads), len({c["command"] for c in reads}))
    by = collections.Counter(c["instance"].split("__")[0] for c in reads)
    print(by)
    uniq_dj = {c["command"] for c in reads if c["instance"].startswith("django")}
    print("django unique", len(uniq_dj))
    print(collections.Counter(shlex.split(c)[0] if words(c) else "?" for c in uniq_dj).most_common(20))
