// The metadata of a loaded model: hyperparameters, cache geometry, compiled
// chunk sizes and tokenizer, copied out of the artifact so that nothing
// refers to the artifact file after loading.
#ifndef RUNTIME_MODEL_INFO_H_
#define RUNTIME_MODEL_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/vocabulary.h"

namespace lnpu::runtime {

// What a saved KV cache depends on: a state saved by one model can only be
// restored into a model with the same identity.
struct ModelIdentity {
  uint32_t metadata_crc32 = 0;  // of the artifact metadata: hyperparameters,
                                // tokenizer, weight table, buffers, graphs
  uint32_t weights_crc32 = 0;   // of 64 evenly spread 4 KiB samples of the
                                // weights (a fingerprint, not a full checksum)
  uint32_t kv_capacity = 0;     // slots
  uint32_t kv_dtype = 0;        // LNPU_DTYPE_*
  uint32_t kv_blocks = 0;       // 2 * n_layers: each layer's K and V
  uint32_t kv_row_bytes = 0;    // one slot's K (or V) row of one layer

  bool operator==(const ModelIdentity&) const = default;
};

struct ModelInfo {
  std::string architecture;  // GGUF general.architecture, e.g. "llama"
  std::string name;          // GGUF general.name
  uint32_t vocab_size = 0;
  uint32_t dim = 0;
  uint32_t n_layers = 0;
  uint32_t n_heads = 0;
  uint32_t n_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t ffn_dim = 0;

  // KV cache: kv_capacity slots per session.
  uint32_t kv_capacity = 0;
  uint32_t max_prompt_len = 0;
  uint32_t min_response_len = 0;
  // Row counts of the compiled prefill graphs, strictly ascending.
  std::vector<uint32_t> prefill_chunks;
  // Rows of the largest Verify graph (Sequence::ForwardAllRows), 0 without
  // one; a run takes the verify graph with the fewest rows that hold it.
  uint32_t verify_rows = 0;
  // Lane counts of the batched decode graphs (DecodeBatch), strictly
  // ascending; empty when the artifact has none.
  std::vector<uint32_t> decode_batches;

  // The tokenizer description and the chat template (GGUF
  // tokenizer.chat_template, may be empty).
  Vocabulary vocabulary;
  std::string chat_template;

  uint64_t weight_bytes = 0;  // size of the artifact's data section
  ModelIdentity identity;
};

}  // namespace lnpu::runtime

#endif  // RUNTIME_MODEL_INFO_H_
