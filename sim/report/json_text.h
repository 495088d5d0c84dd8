#pragma once
// JSON text exactly as nlohmann's dump(2) writes it, made without building a document:
// result.json's collectives, 100,000 of them in a large run, cost a fraction of what
// their nlohmann objects did. Each value's C++ type decides how it is written, as it
// decides nlohmann's number type (a double keeps its ".0"); an object's members come out
// sorted by key, as nlohmann's std::map keeps them.
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collsim {

void append_json(std::string& out, double v);  // not finite: null
void append_json(std::string& out, std::int64_t v);
void append_json(std::string& out, std::uint64_t v);
void append_json(std::string& out, std::string_view v);  // quoted and escaped
void append_json(std::string& out, std::nullptr_t);
inline void append_json(std::string& out, bool v) {
  out += v ? "true" : "false";
}
inline void append_json(std::string& out, const std::string& v) {
  append_json(out, std::string_view(v));
}
inline void append_json(std::string& out, const char* v) {
  append_json(out, std::string_view(v));
}
template <std::signed_integral T>
requires(!std::same_as<T, std::int64_t>) void append_json(std::string& out, T v) {
  append_json(out, static_cast<std::int64_t>(v));
}
template <std::unsigned_integral T>
requires(!std::same_as<T, std::uint64_t> &&
         !std::same_as<T, bool>) void append_json(std::string& out, T v) {
  append_json(out, static_cast<std::uint64_t>(v));
}
template <class T>
void append_json(std::string& out, const std::optional<T>& v) {  // empty: null
  if (v)
    append_json(out, *v);
  else
    append_json(out, nullptr);
}

// Two spaces per level of nesting, as dump(2) indents.
inline void append_indent(std::string& out, int depth) {
  out.append(static_cast<std::size_t>(2 * depth), ' ');
}

// An array of plain values at `depth` (0: the document itself).
template <class T>
void append_json_array(std::string& out, std::span<const T> items, int depth) {
  if (items.empty()) {
    out += "[]";
    return;
  }
  out += "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    append_indent(out, depth + 1);
    append_json(out, items[i]);
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  append_indent(out, depth);
  out += ']';
}

// An object at `depth`, its members added in any order.
class JsonObjectText {
 public:
  explicit JsonObjectText(int depth) : depth_(depth) {}
  // The depth its members' own objects and arrays are written at.
  int inner() const { return depth_ + 1; }

  // Keys are string literals: the object keeps only a view of them.
  template <std::size_t N, class T>
  JsonObjectText& add(const char (&key)[N], const T& value) {
    const std::size_t begin = values_.size();
    append_json(values_, value);
    return added({key, N - 1}, begin);
  }
  template <class T, std::size_t N>
  JsonObjectText& add_array(const char (&key)[N], std::span<const T> items) {
    const std::size_t begin = values_.size();
    append_json_array(values_, items, inner());
    return added({key, N - 1}, begin);
  }
  // A value already written at inner() depth: a nested object or array.
  template <std::size_t N>
  JsonObjectText& add_text(const char (&key)[N], std::string_view text) {
    const std::size_t begin = values_.size();
    values_ += text;
    return added({key, N - 1}, begin);
  }
  // Sorts the members; a key added twice is a logic error (nlohmann would keep one).
  void append_to(std::string& out);
  std::string text() {
    std::string out;
    append_to(out);
    return out;
  }

 private:
  struct Member {
    std::string_view key;    // a literal: it outlives the object
    std::size_t begin, end;  // its value's text in values_
  };
  JsonObjectText& added(std::string_view key, std::size_t begin) {
    members_.push_back({key, begin, values_.size()});
    return *this;
  }

  int depth_;
  std::vector<Member> members_;
  std::string values_;  // every member's value, one after another
};

// An array at `depth` of elements already written at depth + 1 (objects, mostly).
class JsonArrayText {
 public:
  explicit JsonArrayText(int depth) : depth_(depth) {}
  int inner() const { return depth_ + 1; }
  JsonArrayText& add_text(std::string_view element) {
    values_ += empty() ? "\n" : ",\n";
    append_indent(values_, inner());
    values_ += element;
    return *this;
  }
  bool empty() const { return values_.empty(); }
  std::string text() const {
    if (empty()) return "[]";
    std::string out = "[" + values_ + "\n";
    append_indent(out, depth_);
    return out + "]";
  }

 private:
  int depth_;
  std::string values_;
};

}  // namespace collsim
