#pragma once
// Chrome Trace Event Format (what chrome://tracing and Perfetto open), streamed:
// events are formatted into a buffer and written out as it fills, so a trace of
// millions of events never exists as one document in memory. Every string goes
// through one escaper (json_escape), so names holding quotes, backslashes,
// control characters or non-ASCII text still make valid JSON.
//
//   ChromeTrace trace(out);
//   trace.process_name(0, "ranks");
//   trace.complete(0, tid, ts_us, dur_us, "copy 0→1", "ar").arg("bytes", n);
//   trace.finish();
#include <fmt/format.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace collsim {

// `text` as a JSON string literal, quotes included, ASCII only: control characters and
// non-ASCII code points become \u escapes; bytes that are not UTF-8 become U+FFFD.
void json_escape(fmt::memory_buffer& out, std::string_view text);
std::string json_quote(std::string_view text);

class ChromeTrace {
 public:
  // An event's "args" object, open until the Event goes (the end of the statement that
  // made it) or the next event begins, whichever is first: add arguments with arg().
  // Closing at the next event as well keeps the document valid however late a
  // compiler destroys the temporary (clang 14 with ASan destroyed it after later
  // statements); an arg() after that is a logic error.
  class Event {
   public:
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();
    Event& arg(std::string_view key, std::string_view value);
    Event& arg(std::string_view key, const char* value) {
      return arg(key, std::string_view(value));
    }
    Event& arg(std::string_view key, std::int64_t value);
    Event& arg(std::string_view key, int value) { return arg(key, std::int64_t{value}); }
    // A number printed with `format` (e.g. "{:.4f}"): how many digits is the caller's choice.
    Event& arg(std::string_view key, double value, fmt::format_string<double> format);

   private:
    friend class ChromeTrace;
    Event(ChromeTrace& trace, std::uint64_t id) : trace_(trace), id_(id) {}
    void key(std::string_view key);
    ChromeTrace& trace_;
    std::uint64_t id_;  // which event this is; it is open while trace_.open_event_ == id_
  };

  explicit ChromeTrace(std::ostream& out);
  ChromeTrace(const ChromeTrace&) = delete;
  ChromeTrace& operator=(const ChromeTrace&) = delete;
  ~ChromeTrace();  // finish()es if the caller did not

  // Metadata: names of processes (pid) and threads (tid), and the threads' order.
  void process_name(int pid, std::string_view name);
  void thread_name(int pid, int tid, std::string_view name);
  void thread_sort_index(int pid, int tid, int index);
  // A slice ("X") from ts for dur, both in microseconds; printed to the picosecond.
  Event complete(int pid, int tid, double ts_us, double dur_us, std::string_view name,
                 std::string_view category);
  // A flow arrow from ts on one thread ("s") to ts on another ("f", bound to the slice
  // enclosing it); the two ends share id, category and name.
  void flow_start(int pid, int tid, double ts_us, std::uint64_t id, std::string_view category,
                  std::string_view name);
  void flow_end(int pid, int tid, double ts_us, std::uint64_t id, std::string_view category,
                std::string_view name);
  // A counter track sample ("C"): give it values with arg().
  Event counter(int pid, double ts_us, std::string_view name);

  // Closes the document and writes out what is buffered.
  void finish();

 private:
  void begin_event();
  Event open_event();  // for an event whose args the caller adds
  void close_event();  // the open event's args and braces, if one is open
  void string(std::string_view s) { json_escape(buf_, s); }
  template <class... Args>
  void emit(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buf_), format, std::forward<Args>(args)...);
  }
  void flush_if_full();

  std::ostream& out_;
  fmt::memory_buffer buf_;
  bool first_ = true;
  bool finished_ = false;
  std::uint64_t events_ = 0;      // events begun
  std::uint64_t open_event_ = 0;  // the event whose args are open (0: none)
  bool open_has_args_ = false;
};

}  // namespace collsim
