// Semantic verification of a Model flatbuffer (model.fbs) against the data
// section it describes. Artifact::Open runs it after the flatbuffers
// structural Verifier; it is public so tests and tools can check a model
// built in memory.
#ifndef COMPILER_ARTIFACTS_FORMAT_ARTIFACT_VERIFIER_H_
#define COMPILER_ARTIFACTS_FORMAT_ARTIFACT_VERIFIER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "compiler_artifacts/format/model_generated.h"

namespace lnpu::artifact {

// Upper bounds that keep every size computation within 64 bits and reject
// absurd values early.
inline constexpr uint64_t kMaxModelDimension = uint64_t{1} << 20;
inline constexpr uint64_t kMaxBufferSize = uint64_t{1} << 40;
// Most lanes of a batched decode graph (model.fbs Model.decode_batches).
inline constexpr uint32_t kMaxDecodeBatchLanes = 64;

// Bytes per element of an LNPU_DTYPE_* element type (F32, F16, I32, U8);
// 0 for block-quantized and unknown values.
uint64_t DtypeSize(uint32_t dtype);

// Bytes of one KV-cache slot of one layer's K (or V): kv_heads heads of
// head_dim values of `kv_dtype` (LNPU_DTYPE_F32 or F16), or for
// LNPU_DTYPE_I8 one group per head (an f32 scale and head_dim int8). 0 for
// other dtypes and for I8 with head_dim not a multiple of 4.
uint64_t KvRowBytes(uint32_t kv_dtype, uint64_t kv_heads, uint64_t head_dim);

// Slots of layer `layer`'s K and V blocks: KvCache.layer_slots[layer], or
// the capacity when the cache has no window ring (or the entry is absent).
uint32_t KvLayerSlots(const fb::KvCache& kv, uint32_t layer);

// Bytes of a cache of `n_layers` layers, each [2 (K, V)][KvLayerSlots]
// [row_bytes], in layer order.
uint64_t KvCacheBytes(const fb::KvCache& kv, uint32_t n_layers, uint64_t row_bytes);

// True for the block-quantized weight types LNPU_DTYPE_Q8_0 and Q4_0, whose
// rows hold whole blocks of LNPU_QUANT_BLOCK elements.
bool IsBlockQuantized(uint32_t dtype);

// Bytes of a weight of `dtype` with rows of `row_len` elements and `rows`
// rows: element size times count, or whole blocks for block-quantized
// types and Q6_K. 0 for unknown dtypes and for quantized rows that are not
// a multiple of their block (LNPU_QUANT_BLOCK, LNPU_Q6_K_BLOCK). row_len *
// rows must not exceed 2^40.
uint64_t WeightBytes(uint32_t dtype, uint64_t row_len, uint64_t rows);

// Checks that `model` (already structurally verified) is internally
// consistent and fits a data section of `data_size` bytes: hparams,
// tokenizer, buffers, weights, KV cache, graphs with their command streams,
// relocations and I/O operands. Returns InvalidArgument naming the first
// offending element and the rule it breaks. Thread-safe.
absl::Status VerifyModel(const fb::Model& model, uint64_t data_size);

}  // namespace lnpu::artifact

#endif  // COMPILER_ARTIFACTS_FORMAT_ARTIFACT_VERIFIER_H_
