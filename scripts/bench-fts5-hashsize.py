#!/usr/bin/env python3
"""Load documents into an FTS5 table with the index's tokenizer in one
transaction, with FTS5's `hashsize` (and `automerge`) as CONFIG says, then
`optimize`: the work FTS5 does in a rebuild, to count with valgrind, whose
instruction counts this machine's load does not move (docs/benchmarks.md,
"FTS5's pending words").

usage: sqlite3 -readonly KB/.vouch/state.db ".mode list" ".separator x1f x1e" \
           "select c0, c1 from fts_content order by id" > DOCS
       valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
           /usr/bin/python3 scripts/bench-fts5-hashsize.py CONFIG N DOCS
CONFIG is one of default, am0, h4, am0h4, h16, am0h16, h32, h64.
"""
import sqlite3, os, sys
N=int(sys.argv[2]); name=sys.argv[1]
am={'default':None,'am0':0,'am0h4':0,'am0h16':0,'h16':None,'h4':None,'h64':None,'h32':None}[name]
hs={'default':None,'am0':None,'am0h4':4<<20,'am0h16':16<<20,'h16':16<<20,'h4':4<<20,'h64':64<<20,'h32':32<<20}[name]
raw=open(sys.argv[3],'rb').read().decode()
docs=[r.split('x1f',1) for r in raw.split('x1e', N)[:N] if 'x1f' in r]
p=sys.argv[3]+'-%s.db'%name
for s in ['','-wal','-shm']:
    try: os.remove(p+s)
    except FileNotFoundError: pass
c=sqlite3.connect(p, isolation_level=None)
c.execute("pragma journal_mode=wal"); c.execute("pragma cache_size=-65536")
c.execute("create virtual table fts using fts5(title, body, tokenize='porter unicode61 remove_diacritics 2')")
c.execute("begin")
if am is not None: c.execute("insert into fts(fts, rank) values('automerge', ?)", (am,))
if hs is not None: c.execute("insert into fts(fts, rank) values('hashsize', ?)", (hs,))
c.executemany("insert into fts(rowid, title, body) values(?,?,?)", ((i+1,a,b) for i,(a,b) in enumerate(docs)))
if am is not None: c.execute("insert into fts(fts, rank) values('automerge', 4)")
if hs is not None: c.execute("insert into fts(fts, rank) values('hashsize', 1048576)")
c.execute("commit")
c.execute("insert into fts(fts) values('optimize')")
c.close()
