// Runs a Grammar over bytes: a pushdown recognizer whose configuration is
// a set of parse stacks, with every configuration it meets interned as a
// numbered state and every (state, byte) transition cached.
//
// A parse stack is a chain of immutable nodes (position in the grammar's
// elements, parent node); nodes are hash-consed, so equal stacks are the
// same node, and a reference at the end of an alternative does not push
// (tail calls), so right recursion such as a string's characters runs in
// constant stack depth. A state is the sorted set of stack tops (each at
// a byte-set element, or the accept node once the root rule has matched),
// so the configurations met inside a string or number collapse into a few
// states and repeated work is a table lookup (GrammarMatcher walks the
// vocabulary trie through Next()).
//
// Not thread-safe; one per generation. Memory grows with the distinct
// states met; Compact() drops all but the current one.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_RECOGNIZER_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_RECOGNIZER_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "framework/structured_output/grammar.h"

namespace lnpu::framework::structured_output {

class GrammarRecognizer {
 public:
  using StateId = int32_t;
  static constexpr StateId kDead = -1;  // no parse continues

  // Starts at the beginning of `grammar`'s root rule.
  explicit GrammarRecognizer(std::shared_ptr<const Grammar> grammar);

  const Grammar& grammar() const { return *grammar_; }

  // The current state; never kDead.
  StateId state() const { return state_; }
  // Moves to `state`, which must be a state this recognizer returned
  // since the last Compact().
  void set_state(StateId state) { state_ = state; }

  // The state after `byte` from `state` (not kDead), or kDead.
  StateId Next(StateId state, uint8_t byte);
  // Whether the root rule has matched all input up to `state`.
  bool IsAccepting(StateId state) const { return accepting_[state]; }
  // Whether no byte can follow `state`.
  bool IsTerminal(StateId state) const;

  // Consumes `bytes` when the grammar allows all of them; otherwise
  // InvalidArgument naming the offset of the first byte it does not allow,
  // and the state is unchanged.
  absl::Status Advance(std::string_view bytes);
  bool IsAccepting() const { return IsAccepting(state_); }

  size_t state_count() const { return accepting_.size(); }
  // Forgets every state but the current one (which becomes state 0 or 1),
  // to bound memory after many steps.
  void Compact();

 private:
  struct Node {
    int32_t position;  // into grammar elements; kAcceptPosition for accept
    int32_t parent;    // node id, or kNoParent at the root
  };
  static constexpr int32_t kNoParent = -1;
  static constexpr int32_t kAcceptPosition = -1;
  static constexpr int32_t kAcceptNode = 0;
  static constexpr int32_t kUnknown = -2;  // transition not computed yet

  void Reset();
  int32_t InternNode(int32_t position, int32_t parent);
  // The node that resumes at `position` under `parent`: `parent` itself
  // when `position` ends its alternative (no push for a tail reference).
  int32_t Continuation(int32_t position, int32_t parent);
  // Adds to tops_ the stack tops that `node` expands to.
  void Expand(int32_t node);
  // Interns the sorted, deduplicated tops_ as a state.
  StateId InternState();
  // Copies the stack under `node` of `old_nodes` into the node pool.
  int32_t CopyStack(const std::vector<Node>& old_nodes, int32_t node);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> states_;  // sorted stack tops
  absl::flat_hash_map<std::vector<int32_t>, StateId> state_ids_;
  std::vector<bool> accepting_;
  std::vector<StateId> transitions_;  // state * 256 + byte
  StateId state_ = 0;
  // Scratch of Expand.
  std::vector<int32_t> tops_;
  std::vector<int32_t> work_;
  std::vector<int32_t> expanded_;  // nodes expanded in this step
  std::vector<uint32_t> expanded_mark_;  // per node: step stamp
  uint32_t stamp_ = 0;
};

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_GRAMMAR_RECOGNIZER_H_
