-- Indexes created after the bulk import (creating them first would slow every insert).
-- ranges has none on purpose: every report reads it in one sorted pass, and each index
-- cost ~0.5 s per million ranges, over half of an NVTX import (docs/benchmarks.md).
CREATE INDEX marks_by_thread ON marks(thread_id, ts_ns);
CREATE INDEX threads_by_process ON threads(process_id);
CREATE INDEX IF NOT EXISTS cuda_api_by_corr ON cuda_api(process_id, correlation_id); -- CUDA import made it
CREATE INDEX IF NOT EXISTS cuda_api_by_thread ON cuda_api(thread_id, start_ns); -- CUDA import made it
CREATE INDEX kernels_by_start ON kernels(start_ns);
CREATE INDEX kernels_by_name ON kernels(name_id);
CREATE INDEX kernels_by_range ON kernels(nvtx_range_id);
CREATE INDEX memcpys_by_start ON memcpys(start_ns);
CREATE INDEX memsets_by_start ON memsets(start_ns);
CREATE INDEX gpu_samples_by_gpu ON gpu_samples(gpu_id, ts_ns);
CREATE INDEX gpu_metric_samples_by_set ON gpu_metric_samples(set_id, start_ns);
CREATE INDEX nvtx_payload_values_by_range ON nvtx_payload_values(range_id);
CREATE INDEX cpu_samples_by_thread ON cpu_samples(thread_id, ts_ns);
CREATE INDEX cpu_thread_states_by_thread ON cpu_thread_states(thread_id, start_ns);
CREATE INDEX osrt_calls_by_thread ON osrt_calls(thread_id, start_ns);
