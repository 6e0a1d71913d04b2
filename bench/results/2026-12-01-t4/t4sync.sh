#!/bin/bash
# t4sync.sh BIN [serve args]: the T4 configuration (4K randwrite, QD8, 4 jobs, fsync=1,
# page cache, --sync full; fio's nbd engine over a Unix socket, 6 s) against BIN (a diskgate
# binary or a wrapper that execs one, or `nbdkit`); a 2 s system-wide perf record of
# ext4_sync_file enter/exit gives how many syncs ran and how long each took; fio gives the
# write IOPS and the mean latency of writes and of FLUSHes. Needs root, perf and
# /var/tmp/cmp/compare.img. A record of what was run for output.txt, not a test.
BIN=$1; shift; S=${TMPDIR:-/tmp}/t4-sockt4y; rm -f $S
if [ "$BIN" = nbdkit ]; then nbdkit -f -U $S file /var/tmp/cmp/compare.img & P=$!; else
$BIN serve --cache writeback --sync full --socket $S "$@" /var/tmp/cmp/compare.img 2>/dev/null & P=$!; fi
for i in $(seq 30); do [ -S $S ] && break; sleep 0.1; done
fio --name=x --rw=randwrite --bs=4k --iodepth=8 --numjobs=4 --fsync=1 --group_reporting --time_based --runtime=6 --size=1G --ioengine=nbd --uri="nbd+unix:///?socket=$S" --output-format=json > ${TMPDIR:-/tmp}/t4-t4y.json 2>/dev/null & F=$!
sleep 2
perf record -e ext4:ext4_sync_file_enter,ext4:ext4_sync_file_exit,block:block_rq_issue,block:block_rq_complete -a -o ${TMPDIR:-/tmp}/t4-sync.data -- sleep 2 >/dev/null 2>&1
wait $F; kill $P; wait $P 2>/dev/null
perf script -i ${TMPDIR:-/tmp}/t4-sync.data -F tid,time,event,trace 2>/dev/null > ${TMPDIR:-/tmp}/t4-sync.txt
python3 - "${TMPDIR:-/tmp}/t4-sync.txt" <<'PY'
import re,statistics,sys
enter={};d=[];rq={};rqd=[];flush=[]
for l in open(sys.argv[1]):
    p=l.split()
    tid=p[0]; t=float(p[1].rstrip(':')); ev=p[2].rstrip(':')
    if ev=='ext4:ext4_sync_file_enter': enter[tid]=t
    elif ev=='ext4:ext4_sync_file_exit' and tid in enter: d.append((t-enter.pop(tid))*1e6)
    elif ev=='block:block_rq_issue':
        m=re.search(r'(\d+,\d+) (\S+) .*? (\d+) \+ (\d+)',l)
        key=(m.group(3) if m else None)
        if 'F' in p[4] if len(p)>4 else False: pass
        rq[l.split()[3]+' '+(m.group(3) if m else '')]=t
    elif ev=='block:block_rq_complete':
        pass
d.sort()
print('syncs %d in 2 s; duration us: p10 %.0f p50 %.0f p90 %.0f mean %.0f'%(len(d),d[len(d)//10],d[len(d)//2],d[9*len(d)//10],statistics.mean(d)))
PY
python3 -c "
import json;t=open('${TMPDIR:-/tmp}/t4-t4y.json').read();j=json.loads(t[t.index('{'):])['jobs'][0]
print('iops %.0f write clat mean %.0f us, flush lat mean %.0f us'%(j['write']['iops'],j['write']['clat_ns']['mean']/1000,j['sync']['lat_ns']['mean']/1000))"
