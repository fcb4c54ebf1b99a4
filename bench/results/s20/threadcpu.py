"""Per-thread CPU of each pyscheduler process the benchmark starts (utime+stime from /proc, thread names
from py-spy dump), printed when the process exits. Usage: python threadcpu.py OUT.json"""
import json, re, subprocess, sys, time, os
CLK = os.sysconf("SC_CLK_TCK")
PYSPY = "/work/main/.venv/bin/py-spy"
out = []

def find():
    r = subprocess.run(["pgrep", "-f", "pyscheduler.*run.*--config"], capture_output=True, text=True)
    pids = [int(p) for p in r.stdout.split()]
    for p in pids:
        try:
            cmd = open(f"/proc/{p}/cmdline").read()
        except OSError:
            continue
        if "python" in cmd and "pgrep" not in cmd:
            return p
    return None

def cpu(pid):
    res = {}
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                f = open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()
                res[int(t)] = (int(f[11]) + int(f[12])) / CLK
            except OSError:
                pass
    except OSError:
        return None
    return res

def names(pid):
    r = subprocess.run([PYSPY, "dump", "--pid", str(pid), "--nonblocking"], capture_output=True, text=True)
    return {int(m.group(1)): m.group(2) for m in re.finditer(r'Thread (\d+) \([^)]*\): "([^"]*)"', r.stdout)}

deadline = time.time() + float(sys.argv[2]) if len(sys.argv) > 2 else time.time() + 3600
while time.time() < deadline:
    pid = find()
    if pid is None:
        time.sleep(0.2); continue
    last, nm, t0, tn = {}, {}, time.time(), 0.0
    while True:
        c = cpu(pid)
        if c is None:
            break
        last.update(c)
        if time.time() - tn > 2.0:
            nm.update(names(pid)); tn = time.time()
        time.sleep(0.3)
    groups = {}
    for tid, s in last.items():
        n = nm.get(tid, "?")
        n = re.sub(r"[_-]\d+$", "", n)
        groups[n] = groups.get(n, 0.0) + s
    rec = {"pid": pid, "seconds": time.time() - t0, "total": sum(last.values()), "by_thread": dict(sorted(groups.items(), key=lambda kv: -kv[1]))}
    out.append(rec)
    print(json.dumps(rec), flush=True)
    json.dump(out, open(sys.argv[1], "w"), indent=1)
