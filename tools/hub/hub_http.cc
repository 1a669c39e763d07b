#include "hub/hub_http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <mutex>

namespace unmask::hub {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string CaFile(const HttpOptions& o) {
  if (!o.ca_file.empty()) return o.ca_file;
  for (const char* name : {"CURL_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  return "";
}

struct Transfer {
  const HttpOptions* options = nullptr;
  std::map<std::string, std::string> headers;
  bool cancelled = false;
  // GET into memory
  std::string* body = nullptr;
  size_t max_body = 0;
  bool too_big = false;
  // download
  std::FILE* out = nullptr;
  bool write_failed = false;
  bool restarted = false;
  bool ranged = false;
  uint64_t written = 0;
  std::string error_body;
  const std::function<void(const char*, size_t)>* on_data = nullptr;
  const std::function<void()>* on_restart = nullptr;
  const std::function<void(uint64_t)>* on_progress = nullptr;
  long status = 0;
  CURL* curl = nullptr;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->headers.clear();  // a new response (after a redirect or 100 Continue)
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    while (!value.empty() &&
           (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.pop_back();
    }
    t->headers[name] = value;
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  if (t->body != nullptr) {
    if (t->body->size() + len > t->max_body) {
      t->too_big = true;
      return 0;
    }
    t->body->append(data, len);
    return len;
  }
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
  if (t->status != 200 && t->status != 206) {
    if (t->error_body.size() < 4096) t->error_body.append(data, std::min<size_t>(len, 4096));
    return len;
  }
  if (t->status == 200 && t->ranged && !t->restarted) {
    // The server ignored the range: the body is the whole file from byte 0.
    t->restarted = true;
    if (std::fflush(t->out) != 0 || ftruncate(fileno(t->out), 0) != 0 ||
        std::fseek(t->out, 0, SEEK_SET) != 0) {
      t->write_failed = true;
      return 0;
    }
    (*t->on_restart)();
  }
  if (std::fwrite(data, 1, len, t->out) != len) {
    t->write_failed = true;
    return 0;
  }
  (*t->on_data)(data, len);
  t->written += len;
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->options->cancelled && t->options->cancelled()) {
    t->cancelled = true;
    return 1;
  }
  if (t->on_progress != nullptr && *t->on_progress) (*t->on_progress)(t->written);
  return 0;
}

Status TransportError(CURLcode rc, const Transfer& t, const char* errbuf, const std::string& url) {
  if (t.cancelled) return FailedPreconditionError("interrupted");
  std::string why = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
  if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
    why +=
        " (the server's certificate is not trusted: give its CA bundle with --ca-cert or "
        "$SSL_CERT_FILE)";
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) why += " (stalled: under 1 kB/s)";
  return FailedPreconditionError(url + ": " + why);
}

// The handle with what every request shares.
CURL* NewHandle(const std::string& url, const HttpOptions& o, Transfer* t, curl_slist** hdrs,
                char* errbuf) {
  GlobalInit();
  CURL* c = curl_easy_init();
  t->curl = c;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1000L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "unmask/" UNMASK_VERSION " (libcurl)");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
  const std::string ca = CaFile(o);
  if (!ca.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
  if (!o.token.empty()) {
    *hdrs = curl_slist_append(*hdrs, ("Authorization: Bearer " + o.token).c_str());
  }
  // The hub answers with the size and checksums of the bytes on disk, not of a compressed body.
  *hdrs = curl_slist_append(*hdrs, "Accept-Encoding: identity");
  return c;
}

}  // namespace

StatusOr<HttpResponse> HttpGet(const std::string& url, const HttpOptions& options,
                               size_t max_body) {
  Transfer t;
  t.options = &options;
  HttpResponse r;
  t.body = &r.body;
  t.max_body = max_body;
  curl_slist* hdrs = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = NewHandle(url, options, &t, &hdrs, errbuf);
  hdrs = curl_slist_append(hdrs, "Accept: application/json");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  char* eff = nullptr;
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &eff);
  if (eff != nullptr) r.effective_url = eff;
  Status err = rc == CURLE_OK ? Status::Ok() : TransportError(rc, t, errbuf, url);
  curl_easy_cleanup(c);
  curl_slist_free_all(hdrs);
  if (t.too_big) {
    return ResourceExhaustedError(url + ": the answer is over " + std::to_string(max_body) +
                                  " bytes");
  }
  if (!err.ok()) return err;
  r.headers = std::move(t.headers);
  return r;
}

StatusOr<DownloadResult> HttpDownload(const std::string& url, const HttpOptions& options,
                                      uint64_t offset, std::FILE* out,
                                      const std::function<void(const char*, size_t)>& on_data,
                                      const std::function<void()>& on_restart,
                                      const std::function<void(uint64_t)>& on_progress) {
  Transfer t;
  t.options = &options;
  t.out = out;
  t.ranged = offset > 0;
  t.on_data = &on_data;
  t.on_restart = &on_restart;
  t.on_progress = &on_progress;
  curl_slist* hdrs = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = NewHandle(url, options, &t, &hdrs, errbuf);
  if (offset > 0) {
    hdrs = curl_slist_append(hdrs, ("Range: bytes=" + std::to_string(offset) + "-").c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
  const CURLcode rc = curl_easy_perform(c);
  DownloadResult r;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  Status err = rc == CURLE_OK ? Status::Ok() : TransportError(rc, t, errbuf, url);
  curl_easy_cleanup(c);
  curl_slist_free_all(hdrs);
  if (std::fflush(out) != 0) t.write_failed = true;
  if (t.write_failed) return DataLossError("cannot write the download of " + url + " to disk");
  if (!err.ok()) return err;
  r.written = t.written;
  r.headers = std::move(t.headers);
  r.body_start = std::move(t.error_body);
  return r;
}

std::string UrlEncodePath(const std::string& text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    const bool unreserved = std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace unmask::hub
