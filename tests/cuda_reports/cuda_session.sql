-- A small CUDA session with known numbers, shared by the CUDA report and export tests (the
-- expected values in test_cuda_reports.c and test_chrome_cuda.py are worked out by hand from it).
-- Process 1 (pid 1000), threads 1 (tid 1000) and 2 (tid 1001), one H100, streams 7 and 8.
-- Thread 1: push/pop "step" [1000,10000] > "forward" [1100,4000], "backward" [4100,9000];
--           "step" [20000,30000] > "forward" [20100,25000]; "idle" [40000,41000] (no GPU work);
--           start/end "region" [500,21000] overlapping the second step.
-- Thread 2: push/pop "io" [1400,1700] in domain "mylib".
-- GPU work: axpy 500/800/700 ns, reduce 300/200 ns, copies HtoD 4 MB/400 ns and 2 MB/150 ns,
--           DtoH 1 MB/100 ns, memset 2 MB/100 ns; device memory: +4 MB, +1 MB, -4 MB.
INSERT INTO meta VALUES('schema_version', 9),('start_ns', 100),('end_ns', 50100),('command', 'app'),
 ('dropped_events', 0),('trace', 'nvtx,cuda');
INSERT INTO processes(id,pid,exe,start_ns,end_ns,clean_exit) VALUES(1,1000,'/bin/app',0,50000,1);
INSERT INTO threads(id,process_id,tid) VALUES(1,1,1000),(2,1,1001);
INSERT INTO strings VALUES(1,'cudaLaunchKernel'),(2,'cudaMemcpyAsync'),(3,'cudaMemsetAsync'),
 (4,'_Z4axpyPfS_f'),(5,'axpy(float*, float*, float)'),(6,'_Z6reducePf'),(7,'reduce(float*)'),
 (8,'step'),(9,'forward'),(10,'backward'),(11,'chunks 0'),(12,'cudaStreamSynchronize'),
 (13,'region'),(14,'idle'),(15,'mylib'),(16,'io');
INSERT INTO domains VALUES(0,NULL),(1,15);
INSERT INTO gpus(id,uuid,name,nvml_index) VALUES(1,'GPU-aaa','NVIDIA H100 80GB HBM3',0);
INSERT INTO process_gpus VALUES(1,0,1);
INSERT INTO cuda_streams(id,process_id,context,stream,gpu_id,is_default,name_id) VALUES(1,1,1,7,1,0,11),(2,1,1,8,1,0,NULL);
INSERT INTO ranges(id,process_id,name_id,style,depth,parent_id,start_thread_id,end_thread_id,start_ns,end_ns) VALUES
 (1,1,8,0,0,NULL,1,1,1000,10000),
 (2,1,9,0,1,1,1,1,1100,4000),
 (3,1,10,0,1,1,1,1,4100,9000),
 (4,1,8,0,0,NULL,1,1,20000,30000),
 (5,1,9,0,1,4,1,1,20100,25000),
 (6,1,13,1,NULL,NULL,1,1,500,21000),
 (7,1,14,0,0,NULL,1,1,40000,41000),
 (8,1,16,0,0,NULL,2,2,1400,1700);
UPDATE ranges SET domain_id = 1 WHERE id = 8;  -- "io" is in domain "mylib"
INSERT INTO cuda_api(id,process_id,thread_id,api,cbid,name_id,start_ns,end_ns,return_code,correlation_id,nvtx_range_id) VALUES
 (1,1,1,0,211,1,1200,1300,0,1,2),
 (2,1,1,0,211,1,1400,1450,0,2,2),
 (3,1,1,0,41,2,4200,4300,0,3,3),
 (4,1,1,0,211,1,4400,4500,0,4,3),
 (5,1,1,0,54,3,9500,9550,0,5,1),
 (6,1,1,0,211,1,20200,20260,0,6,5),
 (7,1,1,0,41,2,26000,26100,0,7,4),
 (8,1,2,0,211,1,1500,1600,0,8,8),
 (9,1,1,0,131,12,9600,9900,0,9,1),
 (10,1,1,0,41,2,26200,26300,0,10,4);
INSERT INTO kernels(id,process_id,gpu_id,device,context,stream,correlation_id,start_ns,end_ns,name_id,demangled_id,grid_x,grid_y,grid_z,block_x,block_y,block_z,regs_per_thread,static_smem,dynamic_smem,api_id,nvtx_range_id) VALUES
 (1,1,1,0,1,7,1,2000,2500,4,5,256,1,1,128,1,1,32,0,1024,1,2),
 (2,1,1,0,1,7,2,2600,3400,4,5,256,1,1,128,1,1,32,0,1024,2,2),
 (3,1,1,0,1,7,4,5000,5300,6,7,64,2,1,256,1,1,40,2048,0,4,3),
 (4,1,1,0,1,7,6,21000,21700,4,5,512,1,1,128,1,1,32,0,1024,6,5),
 (5,1,1,0,1,8,8,2000,2200,6,7,64,2,1,256,1,1,40,2048,0,8,8);
INSERT INTO memcpys(id,process_id,gpu_id,device,context,stream,correlation_id,start_ns,end_ns,copy_kind,bytes,src_kind,dst_kind,is_async,api_id,nvtx_range_id) VALUES
 (1,1,1,0,1,7,3,4500,4900,'HtoD',4000000,'pageable','device',1,3,3),
 (2,1,1,0,1,7,7,26500,26600,'DtoH',1000000,'device','pinned',1,7,4),
 (3,1,1,0,1,7,10,27000,27150,'HtoD',2000000,'pinned','device',1,10,4);
INSERT INTO memsets(id,process_id,gpu_id,device,context,stream,correlation_id,start_ns,end_ns,bytes,value,mem_kind,is_async,api_id,nvtx_range_id) VALUES
 (1,1,1,0,1,7,5,9700,9800,2000000,0,'device',1,5,1);
INSERT INTO cuda_memory(id,process_id,gpu_id,device,op,mem_kind,address,bytes,ts_ns) VALUES
 (1,1,1,0,'alloc','device',4096,4000000,800),(2,1,1,0,'alloc','device',8192000,1000000,900),
 (3,1,1,0,'free','device',4096,4000000,30000),(4,1,1,0,'alloc','pinned',77,1000000,950);
