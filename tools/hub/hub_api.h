// The Hugging Face hub's HTTP interface as the hub client uses it:
//   GET <endpoint>/api/models/<repo>/revision/<revision>?blobs=true
//       -> {"sha": commit, "siblings": [{"rfilename", "size", "blobId", "lfs": {"sha256",
//       "size"}}]}
//   GET <endpoint>/<repo>/resolve/<commit>/<path>   (302 to a CDN for LFS files; Range works)
// Errors carry "X-Error-Code: RepoNotFound | RevisionNotFound | GatedRepo | EntryNotFound".
// Source: huggingface_hub (hf_api.py model_info with files_metadata, file_download.py
// hf_hub_url), the hub's API documentation.
#ifndef UNMASK_TOOLS_HUB_HUB_API_H_
#define UNMASK_TOOLS_HUB_HUB_API_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace unmask::hub {

struct RepoFile {
  std::string path;  // rfilename: relative, '/'-separated (checked by IsSafeRepoPath)
  uint64_t size = 0;
  bool lfs = false;
  // The blob's name in the cache and its checksum: the LFS sha256 (64 hex) or the git blob
  // sha1 (40 hex).
  std::string etag;
};

struct RepoInfo {
  std::string repo;
  std::string commit;  // 40 hex
  std::vector<RepoFile> files;
};

// $HF_ENDPOINT without a trailing '/', else "https://huggingface.co".
std::string HubEndpoint();
// $HF_TOKEN, else the token file huggingface-cli login writes ($HF_TOKEN_PATH, $HF_HOME/token,
// ~/.cache/huggingface/token), else "".
std::string HubToken();

std::string RepoInfoUrl(const std::string& endpoint, const std::string& repo,
                        const std::string& revision);
std::string ResolveUrl(const std::string& endpoint, const std::string& repo,
                       const std::string& commit, const std::string& path);

// Parses the model-info answer. Errors (DataLoss, "the hub's answer for <repo>: ..."): not JSON,
// no 40-hex sha, siblings missing, a file path that is unsafe (absolute, "..", backslash) or
// repeated, a size missing, a checksum that is not hex of the right length (files without
// blobs metadata cannot be verified and are refused).
StatusOr<RepoInfo> ParseRepoInfo(std::string_view json_text, const std::string& repo);

// The message for an HTTP error from the hub: 401/403 (gated or private: HF_TOKEN), 404 (the
// X-Error-Code says which: repository, revision or file), 429/5xx (try again).
std::string HubErrorMessage(long status, const std::map<std::string, std::string>& headers,
                            std::string_view body, const std::string& what);

// The files to fetch from `info`:
//   include non-empty: the files matching any include pattern (fnmatch, '*' matches '/');
//   else, a repository with safetensors weights: everything but other weight formats (*.bin,
//   *.pt, *.pth, *.ckpt, *.h5, *.msgpack, *.onnx, *.gguf, *.ot, *.tflite) and .gitattributes;
//   else, a GGUF repository: its non-GGUF files and the GGUF files of `quant` (a name part such
//   as Q4_K_M, case-insensitive; "" : the only GGUF, or Q4_K_M as llama.cpp's -hf picks);
//   then files matching an exclude pattern are dropped.
// Errors: InvalidArgument when nothing matches, or when a GGUF repo has several quantizations
// and none was chosen (the message lists them), or `quant` names none of them.
StatusOr<std::vector<RepoFile>> SelectFiles(const RepoInfo& info,
                                            const std::vector<std::string>& include,
                                            const std::vector<std::string>& exclude,
                                            const std::string& quant);

// The quantization names of a GGUF file name: "SmolLM2-135M-Instruct-Q4_K_M.gguf" -> "Q4_K_M"
// ("" when there is none).
std::string GgufQuantName(std::string_view file_name);

}  // namespace unmask::hub

#endif  // UNMASK_TOOLS_HUB_HUB_API_H_
