import sys, time, collections
# sampler.py SECONDS OUT: samples /sys/block/vda/inflight (reads) every ~100 us
dur=float(sys.argv[1]); out=[]
f=open('/sys/block/vda/inflight','rb')
t0=time.perf_counter()
while True:
    t=time.perf_counter()-t0
    if t>dur: break
    f.seek(0); out.append((t,int(f.read().split()[0])))
    time.sleep(0.0001)
v=[x for t,x in out if t>0.5]
c=collections.Counter(v)
print(sys.argv[2], 'samples', len(v), 'zero %.0f%%' % (100*c[0]/len(v)), 'full(>=30) %.0f%%' % (100*sum(n for k,n in c.items() if k>=30)/len(v)), 'mean %.1f' % (sum(v)/len(v)))
open('/tmp/s14/ts-%s.txt'%sys.argv[2],'w').write('\n'.join('%.6f %d'%p for p in out))
