#!/bin/sh
# As run on 2026-12-01 (paths are that machine's: /tmp/s14 held this script and dg-wt).
# run1.sh ENVWT FSYNC: one fio nbd run against dg-wt
rm -f /tmp/s14/s.sock
if [ "$1" = 1 ]; then export DG_WT=1; fi
/tmp/s14/dg-wt serve --cache direct --sync full --socket /tmp/s14/s.sock /var/tmp/cmp/compare.img 2>/dev/null & pid=$!
sleep 0.5
fio --name=t --ioengine=nbd --uri='nbd+unix:///?socket=/tmp/s14/s.sock' --rw=randwrite --bs=4k --iodepth=${3:-8} --numjobs=${4:-4} --fsync=$2 --runtime=4 --time_based --group_reporting --output-format=json 2>/dev/null > /tmp/s14/r.json
kill $pid; wait $pid
python3 -c "
import json;s=open('/tmp/s14/r.json').read(); j=json.loads(s[s.index('{'):])['jobs'][0]
print('WT=$1 fsync=$2 write iops %.0f lat mean us %.0f' % (j['write']['iops'], j['write']['lat_ns']['mean']/1000), 'sync lat mean us %.0f' % (j['sync']['lat_ns']['mean']/1000))
"
