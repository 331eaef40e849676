-- A two-rank NCCL session with known numbers for test_nccl_sum.c (its expected rows are worked
-- out by hand from these). Times in ns; sizes in bytes.
-- Rank 0 (process 1, thread 1), NCCL 2.24-style payloads, communicator 77 of 4 ranks:
--   ncclCommInitRank [0,1000]: comm 77, 4 ranks (given with its pop)
--   ncclAllReduce [2000,2100] 1 MB Sum: launches (2050) a RING_LL f32 kernel of 1000 ns
--   ncclAllReduceConfig [5000,5100] 1 MB Sum: launches (5050) a RING_LL f32 kernel of 3000 ns
--   ncclAllGather [10000,10100] 250 kB per rank: launches (10050) a RING_LL kernel of 500 ns
--   ncclGroupStart [12000,12010], ncclAllReduce [12020,12030] 300 B Max, ncclAllReduce
--   [12040,12050] 100 B Max, ncclGroupEnd [12060,12200]: launches (12100, 12150) two kernels,
--   RING_LL f32 800 ns and TREE_LL f32 200 ns, shared by the two calls in proportion to bytes
-- Rank 1 (process 2, thread 2), no payloads (NCCL_NVTX_DISABLE=1 or NCCL < 2.19):
--   ncclSend [100,200]: launches (150) a SendRecv kernel of 600 ns
--   an AllReduce kernel of 2000 ns launched (300) after no call; a SendRecv kernel of 400 ns
--   whose launch was not recorded; a SendRecv kernel of 700 ns replayed from a CUDA graph
--   launched (170) after the Send
INSERT INTO meta VALUES('schema_version', 9),('start_ns', 0),('end_ns', 20000),('command', 'app'),
 ('dropped_events', 0),('trace', 'nvtx,cuda');
INSERT INTO processes(id,pid,exe,name,rank,start_ns,end_ns,clean_exit) VALUES
 (1,1000,'/bin/app','app',0,0,20000,1),(2,1001,'/bin/app','app',1,0,20000,1);
INSERT INTO threads(id,process_id,tid) VALUES(1,1,1000),(2,2,1001);
INSERT INTO strings VALUES(1,'NCCL'),(2,'ncclCommInitRank'),(3,'ncclAllReduce'),
 (4,'ncclAllGather'),(5,'ncclGroupStart'),(6,'ncclGroupEnd'),(7,'ncclSend'),
 (8,'Message size [bytes]'),(9,'NCCL communicator ID'),(10,'No. of ranks'),
 (11,'Reduction operation'),(12,'Sum'),(13,'Max'),(14,'cudaLaunchKernelExC'),
 (15,'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
 (16,'ncclDevKernel_AllReduce_Sum_f32_TREE_LL(ncclDevKernelArgsStorage<4096ul>)'),
 (17,'ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)'),
 (18,'_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE'),
 (19,'AllReduce'),(20,'CommInitRank'),(21,'ncclAllReduceConfig');
INSERT INTO domains VALUES(0,NULL),(1,1);
INSERT INTO ranges(id,process_id,domain_id,name_id,style,depth,start_thread_id,end_thread_id,start_ns,end_ns) VALUES
 (1,1,1,2,0,0,1,1,0,1000),
 (2,1,1,3,0,0,1,1,2000,2100),
 (3,1,1,21,0,0,1,1,5000,5100),
 (4,1,1,4,0,0,1,1,10000,10100),
 (5,1,1,5,0,0,1,1,12000,12010),
 (6,1,1,3,0,0,1,1,12020,12030),
 (7,1,1,3,0,0,1,1,12040,12050),
 (8,1,1,6,0,0,1,1,12060,12200),
 (9,2,1,7,0,0,2,2,100,200);
INSERT INTO nvtx_payload_schemas(id,process_id,domain_id,schema_id,is_enum,name_id,schema_type,static_size,entry_count) VALUES
 (1,1,1,16777216,0,20,1,24,4),(2,1,1,16777221,0,19,1,24,3);
INSERT INTO nvtx_payloads(id,range_id,idx,count,schema_id,schema_row,size,truncated) VALUES
 (1,1,0,1,16777216,1,24,0),(2,2,0,1,16777221,2,24,0),(3,3,0,1,16777221,2,24,0),
 (4,4,0,1,16777220,NULL,16,0),(5,6,0,1,16777221,2,24,0),(6,7,0,1,16777221,2,24,0);
INSERT INTO nvtx_payload_values(payload_id,range_id,entry_idx,name_id,value,enum_name_id) VALUES
 (1,1,0,9,77,NULL),(1,1,1,10,4,NULL),
 (2,2,0,9,77,NULL),(2,2,1,8,1000000,NULL),(2,2,2,11,0,12),
 (3,3,0,9,77,NULL),(3,3,1,8,1000000,NULL),(3,3,2,11,0,12),
 (4,4,0,9,77,NULL),(4,4,1,8,250000,NULL),
 (5,6,0,9,77,NULL),(5,6,1,8,300,NULL),(5,6,2,11,2,13),
 (6,7,0,9,77,NULL),(6,7,1,8,100,NULL),(6,7,2,11,2,13);
INSERT INTO cuda_api(id,process_id,thread_id,api,name_id,start_ns,end_ns,correlation_id) VALUES
 (1,1,1,0,14,2050,2060,1),(2,1,1,0,14,5050,5060,2),(3,1,1,0,14,10050,10060,3),
 (4,1,1,0,14,12100,12110,4),(5,1,1,0,14,12150,12160,5),
 (6,2,2,0,14,150,160,6),(7,2,2,0,14,300,310,7),(8,2,2,0,14,170,180,9);
INSERT INTO kernels(id,process_id,correlation_id,start_ns,end_ns,name_id,demangled_id,api_id,graph_id) VALUES
 (1,1,1,3000,4000,15,15,1,NULL),(2,1,2,6000,9000,15,15,2,NULL),(3,1,3,11000,11500,17,17,3,NULL),
 (4,1,4,13000,13800,15,15,4,NULL),(5,1,5,13000,13200,16,16,5,NULL),
 (6,2,6,1000,1600,18,NULL,6,NULL),(7,2,7,2000,4000,15,15,7,NULL),(8,2,8,5000,5400,18,NULL,NULL,NULL),
 (9,2,9,6000,6700,18,NULL,8,3);
