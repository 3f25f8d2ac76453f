#include "framework/structured_output/grammar.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace lnpu::framework::structured_output {

ByteSet ByteRange(uint8_t lo, uint8_t hi) {
  ByteSet set;
  for (int b = lo; b <= hi; ++b) set.set(b);
  return set;
}

ByteSet BytesOf(std::string_view bytes) {
  ByteSet set;
  for (char c : bytes) set.set(static_cast<uint8_t>(c));
  return set;
}

Expr Literal(std::string_view bytes) {
  Expr e;
  e.kind = Expr::Kind::kLiteral;
  e.literal = std::string(bytes);
  return e;
}

Expr Set(const ByteSet& set) {
  Expr e;
  e.kind = Expr::Kind::kSet;
  e.set = set;
  return e;
}

Expr Sequence(std::vector<Expr> items) {
  Expr e;
  e.kind = Expr::Kind::kSequence;
  e.items = std::move(items);
  return e;
}

Expr Choice(std::vector<Expr> items) {
  Expr e;
  e.kind = Expr::Kind::kChoice;
  e.items = std::move(items);
  return e;
}

Expr Repeat(Expr item, int min, int max) {
  Expr e;
  e.kind = Expr::Kind::kRepeat;
  e.items.push_back(std::move(item));
  e.min = min;
  e.max = max;
  return e;
}

Expr Optional(Expr item) { return Repeat(std::move(item), 0, 1); }
Expr Star(Expr item) { return Repeat(std::move(item), 0, -1); }

Expr RuleRef(int rule) {
  Expr e;
  e.kind = Expr::Kind::kRule;
  e.rule = rule;
  return e;
}

namespace {

std::string SetToString(const ByteSet& set) {
  if (set.count() == 1) {
    for (int b = 0; b < 256; ++b) {
      if (set.test(b)) {
        return b >= 0x21 && b < 0x7f && b != '\'' && b != '\\'
                   ? absl::StrFormat("'%c'", b)
                   : absl::StrFormat("'\\x%02x'", b);
      }
    }
  }
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(b)) {
      ++b;
      continue;
    }
    int end = b;
    while (end + 1 < 256 && set.test(end + 1)) ++end;
    auto one = [](int c) {
      return c >= 0x21 && c < 0x7f && c != ']' && c != '\\' && c != '-'
                 ? std::string(1, static_cast<char>(c))
                 : absl::StrFormat("\\x%02x", c);
    };
    absl::StrAppend(&out, one(b));
    if (end > b) absl::StrAppend(&out, "-", one(end));
    b = end + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::ToString() const {
  std::string out;
  for (size_t r = 0; r < rules_.size(); ++r) {
    absl::StrAppend(&out, rule_names_[r], "#", r, " ::=");
    for (size_t a = 0; a < rules_[r].size(); ++a) {
      absl::StrAppend(&out, a == 0 ? "" : " |");
      for (int32_t i = rules_[r][a]; elements_[i].kind != Element::kEnd; ++i) {
        const Element& e = elements_[i];
        absl::StrAppend(&out, " ",
                        e.kind == Element::kSet
                            ? SetToString(sets_[e.index])
                            : absl::StrCat(rule_names_[e.index], "#", e.index));
      }
      if (elements_[rules_[r][a]].kind == Element::kEnd) {
        absl::StrAppend(&out, " ''");
      }
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

int GrammarBuilder::AddRule(std::string name) {
  grammar_.rules_.emplace_back();
  grammar_.rule_names_.push_back(std::move(name));
  defined_.push_back(false);
  return static_cast<int>(grammar_.rules_.size()) - 1;
}

int GrammarBuilder::DefineNewRule(std::string name, const Expr& body) {
  const int rule = AddRule(std::move(name));
  DefineRule(rule, body);
  return rule;
}

void GrammarBuilder::DefineRule(int rule, const Expr& body) {
  // Lower every alternative on the side first: lowering may add rules,
  // whose elements must not interleave with this rule's.
  std::vector<std::vector<Grammar::Element>> alternatives;
  if (body.kind == Expr::Kind::kChoice) {
    for (const Expr& item : body.items) {
      Lower(item, alternatives.emplace_back());
    }
  } else {
    Lower(body, alternatives.emplace_back());
  }
  for (std::vector<Grammar::Element>& alternative : alternatives) {
    grammar_.rules_[rule].push_back(
        static_cast<int32_t>(grammar_.elements_.size()));
    grammar_.elements_.insert(grammar_.elements_.end(), alternative.begin(),
                              alternative.end());
    grammar_.elements_.push_back({Grammar::Element::kEnd, 0});
  }
  if (grammar_.elements_.size() > kMaxElements) too_large_ = true;
  defined_[rule] = true;
}

int32_t GrammarBuilder::InternSet(const ByteSet& set) {
  auto [it, inserted] = set_ids_.try_emplace(
      set.to_string(), static_cast<int32_t>(grammar_.sets_.size()));
  if (inserted) grammar_.sets_.push_back(set);
  return it->second;
}

Grammar::Element GrammarBuilder::AsElement(const Expr& expr,
                                           const std::string& name) {
  if (expr.kind == Expr::Kind::kSet) {
    return {Grammar::Element::kSet, InternSet(expr.set)};
  }
  if (expr.kind == Expr::Kind::kLiteral && expr.literal.size() == 1) {
    return {Grammar::Element::kSet, InternSet(BytesOf(expr.literal))};
  }
  if (expr.kind == Expr::Kind::kRule) {
    return {Grammar::Element::kRule, expr.rule};
  }
  return {Grammar::Element::kRule, DefineNewRule(name, expr)};
}

void GrammarBuilder::Lower(const Expr& expr,
                           std::vector<Grammar::Element>& out) {
  if (too_large_) return;
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      for (char c : expr.literal) {
        out.push_back({Grammar::Element::kSet,
                       InternSet(BytesOf(std::string_view(&c, 1)))});
      }
      break;
    case Expr::Kind::kSet:
    case Expr::Kind::kRule:
      out.push_back(AsElement(expr, ""));
      break;
    case Expr::Kind::kSequence:
      for (const Expr& item : expr.items) Lower(item, out);
      break;
    case Expr::Kind::kChoice:
      out.push_back(
          {Grammar::Element::kRule,
           DefineNewRule(absl::StrCat("choice", grammar_.rules_.size()), expr)});
      break;
    case Expr::Kind::kRepeat: {
      const int min = expr.min;
      const int max = expr.max;
      const size_t copies =
          static_cast<size_t>(min) + (max > min ? max - min : 0);
      if (min < 0 || (max >= 0 && max < min)) {
        // An empty range matches nothing: a rule without alternatives.
        out.push_back(
            {Grammar::Element::kRule, DefineNewRule("nothing", Choice({}))});
        break;
      }
      if (copies > kMaxElements) {
        too_large_ = true;
        break;
      }
      const Grammar::Element item = AsElement(
          expr.items[0], absl::StrCat("item", grammar_.rules_.size()));
      for (int i = 0; i < min; ++i) out.push_back(item);
      if (max < 0) {
        const int star = AddRule(absl::StrCat("star", grammar_.rules_.size()));
        grammar_.rules_[star].push_back(
            static_cast<int32_t>(grammar_.elements_.size()));
        grammar_.elements_.push_back(item);
        grammar_.elements_.push_back({Grammar::Element::kRule, star});
        grammar_.elements_.push_back({Grammar::Element::kEnd, 0});
        grammar_.rules_[star].push_back(
            static_cast<int32_t>(grammar_.elements_.size()));
        grammar_.elements_.push_back({Grammar::Element::kEnd, 0});
        defined_[star] = true;
        out.push_back({Grammar::Element::kRule, star});
      } else if (max > min) {
        // opt_k ::= item opt_{k-1} | '' for k = 1..max-min.
        int previous = -1;
        for (int k = 1; k <= max - min; ++k) {
          const int opt = AddRule(absl::StrCat("upto", k));
          grammar_.rules_[opt].push_back(
              static_cast<int32_t>(grammar_.elements_.size()));
          grammar_.elements_.push_back(item);
          if (previous >= 0) {
            grammar_.elements_.push_back({Grammar::Element::kRule, previous});
          }
          grammar_.elements_.push_back({Grammar::Element::kEnd, 0});
          grammar_.rules_[opt].push_back(
              static_cast<int32_t>(grammar_.elements_.size()));
          grammar_.elements_.push_back({Grammar::Element::kEnd, 0});
          defined_[opt] = true;
          previous = opt;
        }
        out.push_back({Grammar::Element::kRule, previous});
      }
      if (grammar_.elements_.size() > kMaxElements) too_large_ = true;
      break;
    }
  }
}

absl::StatusOr<Grammar> GrammarBuilder::Build(int root) && {
  if (too_large_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the grammar needs more than ", kMaxElements,
        " elements: lower the repetition bounds (maxLength, maxItems, "
        "{m,n}) of the schema"));
  }
  const size_t rule_count = grammar_.rules_.size();
  if (root < 0 || static_cast<size_t>(root) >= rule_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("the root rule ", root, " was never declared"));
  }
  for (size_t r = 0; r < rule_count; ++r) {
    if (!defined_[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat("grammar rule '", grammar_.rule_names_[r], "' (#", r,
                       ") is referenced but never defined"));
    }
  }
  const std::vector<Grammar::Element>& elements = grammar_.elements_;
  // Which rules match the empty string (fixpoint).
  std::vector<bool> nullable(rule_count, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rule_count; ++r) {
      if (nullable[r]) continue;
      for (int32_t start : grammar_.rules_[r]) {
        int32_t i = start;
        while (elements[i].kind == Grammar::Element::kRule &&
               nullable[elements[i].index]) {
          ++i;
        }
        if (elements[i].kind == Grammar::Element::kEnd) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // A rule must not reach itself through leading references that consume
  // nothing: the recognizer's expansion would never end. Depth-first
  // search for a cycle over those edges.
  std::vector<int> mark(rule_count, 0);  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<int, size_t>> path;  // rule, next edge
  auto leading_refs = [&](int r) {
    std::vector<int> refs;
    for (int32_t start : grammar_.rules_[r]) {
      for (int32_t i = start; elements[i].kind == Grammar::Element::kRule;
           ++i) {
        refs.push_back(elements[i].index);
        if (!nullable[elements[i].index]) break;
      }
    }
    return refs;
  };
  for (size_t start = 0; start < rule_count; ++start) {
    if (mark[start] != 0) continue;
    std::vector<std::vector<int>> edges_of_path;
    path.push_back({static_cast<int>(start), 0});
    edges_of_path.push_back(leading_refs(static_cast<int>(start)));
    mark[start] = 1;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == edges_of_path.back().size()) {
        mark[rule] = 2;
        path.pop_back();
        edges_of_path.pop_back();
        continue;
      }
      const int to = edges_of_path.back()[next++];
      if (mark[to] == 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "grammar rule '", grammar_.rule_names_[to], "' (#", to,
            ") can reach itself without consuming input (left recursion or "
            "repetition of something that matches the empty string)"));
      }
      if (mark[to] == 0) {
        mark[to] = 1;
        path.push_back({to, 0});
        edges_of_path.push_back(leading_refs(to));
      }
    }
  }
  grammar_.root_ = root;
  return std::move(grammar_);
}

}  // namespace lnpu::framework::structured_output
