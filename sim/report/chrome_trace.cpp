#include "report/chrome_trace.h"

#include <stdexcept>

#include <iterator>

#include "core/utf8.h"

namespace collsim {
namespace {

// Flushing at about a megabyte keeps the buffer's memory flat whatever the trace's size.
constexpr std::size_t kFlushBytes = 1 << 20;

void append_u16(fmt::memory_buffer& out, unsigned unit) {
  fmt::format_to(std::back_inserter(out), "\\u{:04x}", unit);
}

}  // namespace

void json_escape(fmt::memory_buffer& out, std::string_view text) {
  out.push_back('"');
  std::size_t plain = 0;  // start of the run of characters copied as they are
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out.append(text.data() + plain, text.data() + i);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out.append(std::string_view("\\\""));
          break;
        case '\\':
          out.append(std::string_view("\\\\"));
          break;
        case '\b':
          out.append(std::string_view("\\b"));
          break;
        case '\f':
          out.append(std::string_view("\\f"));
          break;
        case '\n':
          out.append(std::string_view("\\n"));
          break;
        case '\r':
          out.append(std::string_view("\\r"));
          break;
        case '\t':
          out.append(std::string_view("\\t"));
          break;
        default:
          append_u16(out, c);
      }
      ++i;
    } else if (auto [cp, n] = decode_utf8(text, i); n > 0) {
      if (cp >= 0x10000) {  // outside the basic plane: a UTF-16 surrogate pair
        append_u16(out, 0xD800 + ((cp - 0x10000) >> 10));
        append_u16(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
      } else {
        append_u16(out, cp);
      }
      i += n;
    } else {
      append_u16(out, 0xFFFD);  // not UTF-8: the replacement character, one per byte
      ++i;
    }
    plain = i;
  }
  out.append(text.data() + plain, text.data() + text.size());
  out.push_back('"');
}

std::string json_quote(std::string_view text) {
  fmt::memory_buffer buf;
  json_escape(buf, text);
  return fmt::to_string(buf);
}

ChromeTrace::ChromeTrace(std::ostream& out) : out_(out) {
  emit("{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
}

ChromeTrace::~ChromeTrace() {
  if (!finished_) finish();
}

void ChromeTrace::begin_event() {
  close_event();
  ++events_;
  if (!first_) emit(",\n");
  first_ = false;
}

ChromeTrace::Event ChromeTrace::open_event() {
  open_event_ = events_;
  open_has_args_ = false;
  return Event(*this, events_);
}

void ChromeTrace::close_event() {
  if (open_event_ == 0) return;
  buf_.append(std::string_view(open_has_args_ ? "}}" : "}"));
  open_event_ = 0;
  flush_if_full();
}

void ChromeTrace::flush_if_full() {
  if (buf_.size() < kFlushBytes) return;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void ChromeTrace::finish() {
  close_event();
  emit("\n]}}\n");
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
  finished_ = true;
}

void ChromeTrace::process_name(int pid, std::string_view name) {
  begin_event();
  emit("{{\"ph\":\"M\",\"pid\":{},\"tid\":0,\"name\":\"process_name\",\"args\":{{\"name\":", pid);
  string(name);
  emit("}}}}");
}

void ChromeTrace::thread_name(int pid, int tid, std::string_view name) {
  begin_event();
  emit("{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{\"name\":", pid,
       tid);
  string(name);
  emit("}}}}");
}

void ChromeTrace::thread_sort_index(int pid, int tid, int index) {
  begin_event();
  emit(
      "{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_sort_index\",\"args\":{{\"sort_"
      "index\":{}}}}}",
      pid, tid, index);
}

ChromeTrace::Event ChromeTrace::complete(int pid, int tid, double ts_us, double dur_us,
                                         std::string_view name, std::string_view category) {
  begin_event();
  emit("{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.6f},\"dur\":{:.6f},\"cat\":", pid, tid,
       ts_us, dur_us);
  string(category);
  emit(",\"name\":");
  string(name);
  return open_event();
}

void ChromeTrace::flow_start(int pid, int tid, double ts_us, std::uint64_t id,
                             std::string_view category, std::string_view name) {
  begin_event();
  emit("{{\"ph\":\"s\",\"pid\":{},\"tid\":{},\"ts\":{:.6f},\"id\":{},\"cat\":", pid, tid, ts_us,
       id);
  string(category);
  emit(",\"name\":");
  string(name);
  emit("}}");
  flush_if_full();
}

void ChromeTrace::flow_end(int pid, int tid, double ts_us, std::uint64_t id,
                           std::string_view category, std::string_view name) {
  begin_event();
  emit("{{\"ph\":\"f\",\"bp\":\"e\",\"pid\":{},\"tid\":{},\"ts\":{:.6f},\"id\":{},\"cat\":", pid,
       tid, ts_us, id);
  string(category);
  emit(",\"name\":");
  string(name);
  emit("}}");
  flush_if_full();
}

ChromeTrace::Event ChromeTrace::counter(int pid, double ts_us, std::string_view name) {
  begin_event();
  emit("{{\"ph\":\"C\",\"pid\":{},\"ts\":{:.6f},\"name\":", pid, ts_us);
  string(name);
  return open_event();
}

void ChromeTrace::Event::key(std::string_view key) {
  if (trace_.open_event_ != id_)
    throw std::logic_error("chrome trace: an argument added after its event was closed");
  trace_.buf_.append(std::string_view(trace_.open_has_args_ ? "," : ",\"args\":{"));
  trace_.open_has_args_ = true;
  trace_.string(key);
  trace_.buf_.push_back(':');
}

ChromeTrace::Event& ChromeTrace::Event::arg(std::string_view k, std::string_view value) {
  key(k);
  trace_.string(value);
  return *this;
}

ChromeTrace::Event& ChromeTrace::Event::arg(std::string_view k, std::int64_t value) {
  key(k);
  trace_.emit("{}", value);
  return *this;
}

ChromeTrace::Event& ChromeTrace::Event::arg(std::string_view k, double value,
                                            fmt::format_string<double> format) {
  key(k);
  trace_.emit(format, std::move(value));
  return *this;
}

ChromeTrace::Event::~Event() {
  if (trace_.open_event_ == id_) trace_.close_event();
}

}  // namespace collsim
