// HTTPS for the hub client, over libcurl (Debian's libcurl4-openssl-dev): redirects, proxies
// ($https_proxy, $no_proxy: libcurl reads them), CA bundles, resumable ranged downloads.
#ifndef UNMASK_TOOLS_HUB_HUB_HTTP_H_
#define UNMASK_TOOLS_HUB_HUB_HTTP_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "core/status.h"

namespace unmask::hub {

struct HttpOptions {
  // A PEM bundle of trusted CAs ("" : $CURL_CA_BUNDLE, $SSL_CERT_FILE, $REQUESTS_CA_BUNDLE, else
  // the system's).
  std::string ca_file;
  std::string token;  // sent as "Authorization: Bearer" (not to other hosts after a redirect)
  long connect_timeout_s = 30;
  // A transfer slower than 1 kB/s for this long is abandoned (and retried by the caller).
  long stall_timeout_s = 60;
  // Returns true to abandon the transfer (Ctrl-C).
  std::function<bool()> cancelled;
};

struct HttpResponse {
  long status = 0;  // HTTP status of the last response (after redirects)
  std::string body;
  std::map<std::string, std::string> headers;  // lowercase names, of the last response
  std::string effective_url;
};

// GET `url`, following redirects, the body kept in memory up to `max_body` bytes.
// Errors: FailedPrecondition with libcurl's reason for a transport failure (DNS, refused,
// TLS verification: the message names $SSL_CERT_FILE) or a cancel; ResourceExhausted for a body
// over max_body. An HTTP error status is a response, not an error.
StatusOr<HttpResponse> HttpGet(const std::string& url, const HttpOptions& options, size_t max_body);

struct DownloadResult {
  long status = 0;       // 200 (whole file), 206 (resumed from `offset`), 416, or an error status
  uint64_t written = 0;  // bytes appended to the file in this call
  std::map<std::string, std::string> headers;
  std::string body_start;  // the first bytes of an error response's body (its message)
};

// GET `url` with "Range: bytes=<offset>-" when offset > 0, appending the body to `out` (opened
// for writing at `offset`) when the status is 200 or 206: `on_data(ptr, n)` sees every byte
// written (hashing), `on_progress(bytes written so far)` is called as data arrives. A 200 answer
// to a ranged request means the server ignored the range: the caller sees status 200 and
// `written` counts from 0 after it truncated the file (`on_restart` is called first). Errors:
// FailedPrecondition for a transport failure, a stall, or a cancel (the bytes written so far
// stay in `out`); DataLoss when the file cannot be written.
StatusOr<DownloadResult> HttpDownload(const std::string& url, const HttpOptions& options,
                                      uint64_t offset, std::FILE* out,
                                      const std::function<void(const char*, size_t)>& on_data,
                                      const std::function<void()>& on_restart,
                                      const std::function<void(uint64_t)>& on_progress);

// RFC 3986 percent-encoding of a path segment ('/' kept when keep_slash).
std::string UrlEncodePath(const std::string& text, bool keep_slash);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_HUB_HTTP_H_
