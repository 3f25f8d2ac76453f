#include "framework/structured_output/grammar_recognizer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::framework::structured_output {

GrammarRecognizer::GrammarRecognizer(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)) {
  Reset();
  ++stamp_;
  tops_.clear();
  for (int32_t start : grammar_->rules()[grammar_->root()]) {
    Expand(Continuation(start, kNoParent));
  }
  state_ = InternState();
}

void GrammarRecognizer::Reset() {
  nodes_.clear();
  node_ids_.clear();
  states_.clear();
  state_ids_.clear();
  accepting_.clear();
  transitions_.clear();
  expanded_mark_.clear();
  nodes_.push_back({kAcceptPosition, kNoParent});  // kAcceptNode
}

int32_t GrammarRecognizer::InternNode(int32_t position, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(position))
                        << 32) |
                       static_cast<uint32_t>(parent);
  auto [it, inserted] =
      node_ids_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({position, parent});
  return it->second;
}

int32_t GrammarRecognizer::Continuation(int32_t position, int32_t parent) {
  if (parent != kNoParent &&
      grammar_->elements()[position].kind == Grammar::Element::kEnd) {
    return parent;
  }
  return InternNode(position, parent);
}

void GrammarRecognizer::Expand(int32_t node) {
  const std::vector<Grammar::Element>& elements = grammar_->elements();
  work_.push_back(node);
  while (!work_.empty()) {
    const int32_t n = work_.back();
    work_.pop_back();
    if (expanded_mark_.size() < nodes_.size()) {
      expanded_mark_.resize(nodes_.size() * 2, 0);
    }
    if (expanded_mark_[n] == stamp_) continue;
    expanded_mark_[n] = stamp_;
    const Node current = nodes_[n];
    if (current.position == kAcceptPosition) {
      tops_.push_back(kAcceptNode);
      continue;
    }
    const Grammar::Element element = elements[current.position];
    switch (element.kind) {
      case Grammar::Element::kSet:
        tops_.push_back(n);
        break;
      case Grammar::Element::kEnd:
        if (current.parent == kNoParent) {
          tops_.push_back(kAcceptNode);
        } else {
          work_.push_back(current.parent);
        }
        break;
      case Grammar::Element::kRule: {
        const int32_t next = Continuation(current.position + 1, current.parent);
        for (int32_t start : grammar_->rules()[element.index]) {
          work_.push_back(Continuation(start, next));
        }
        break;
      }
    }
  }
}

GrammarRecognizer::StateId GrammarRecognizer::InternState() {
  std::sort(tops_.begin(), tops_.end());
  tops_.erase(std::unique(tops_.begin(), tops_.end()), tops_.end());
  auto [it, inserted] =
      state_ids_.try_emplace(tops_, static_cast<StateId>(states_.size()));
  if (inserted) {
    states_.push_back(tops_);
    accepting_.push_back(!tops_.empty() && tops_.front() == kAcceptNode);
    transitions_.resize(transitions_.size() + 256, kUnknown);
  }
  return it->second;
}

GrammarRecognizer::StateId GrammarRecognizer::Next(StateId state,
                                                   uint8_t byte) {
  const StateId cached = transitions_[static_cast<size_t>(state) * 256 + byte];
  if (cached != kUnknown) return cached;
  const std::vector<Grammar::Element>& elements = grammar_->elements();
  const std::vector<ByteSet>& sets = grammar_->sets();
  ++stamp_;
  tops_.clear();
  for (int32_t n : states_[state]) {
    if (n == kAcceptNode) continue;
    const Node node = nodes_[n];
    if (sets[elements[node.position].index].test(byte)) {
      Expand(Continuation(node.position + 1, node.parent));
    }
  }
  const StateId next = tops_.empty() ? kDead : InternState();
  transitions_[static_cast<size_t>(state) * 256 + byte] = next;
  return next;
}

bool GrammarRecognizer::IsTerminal(StateId state) const {
  for (int32_t n : states_[state]) {
    if (n != kAcceptNode) return false;
  }
  return true;
}

absl::Status GrammarRecognizer::Advance(std::string_view bytes) {
  StateId state = state_;
  for (size_t i = 0; i < bytes.size(); ++i) {
    state = Next(state, static_cast<uint8_t>(bytes[i]));
    if (state == kDead) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the grammar does not allow byte ", i, " (0x",
          absl::Hex(static_cast<uint8_t>(bytes[i]), absl::kZeroPad2),
          ") of the input here"));
    }
  }
  state_ = state;
  return absl::OkStatus();
}

int32_t GrammarRecognizer::CopyStack(const std::vector<Node>& old_nodes,
                                     int32_t node) {
  if (node == kAcceptNode) return kAcceptNode;
  std::vector<int32_t> chain;  // top first
  for (int32_t n = node; n != kNoParent; n = old_nodes[n].parent) {
    chain.push_back(n);
  }
  int32_t parent = kNoParent;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    parent = InternNode(old_nodes[*it].position, parent);
  }
  return parent;
}

void GrammarRecognizer::Compact() {
  const std::vector<Node> old_nodes = std::move(nodes_);
  const std::vector<int32_t> old_tops = states_[state_];
  Reset();
  tops_.clear();
  for (int32_t top : old_tops) tops_.push_back(CopyStack(old_nodes, top));
  state_ = InternState();
}

}  // namespace lnpu::framework::structured_output
