// Medusa heads and EAGLE draft layers of the AR models `unmask serve` loads: the files named by
// --draft-heads ([MODEL_ID=]FILE) and, for a kind no file names, the one beside the model
// (MODEL.medusa.gguf, MODEL.eagle.gguf).
#ifndef UNMASK_TOOLS_SERVER_DRAFT_FILES_H_
#define UNMASK_TOOLS_SERVER_DRAFT_FILES_H_

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/server.h"

namespace unmask::server {

// Loads the draft files of every AR model in `models` (diffusion models take none) into its
// medusa_heads / eagle_head, and prints one line per file loaded.
//
// `named`: serve's --draft-heads values, each "FILE" or "MODEL_ID=FILE" (split at an '=' whose
// left part is a served model's id, preferring one whose right part is a file, and not when the
// whole value is a file: paths and ids with '=' in them still work). A file's own
// architecture (medusa or eagle) says what it holds, and it replaces the file of that kind beside
// the model. "FILE" alone is for the only AR model served.
//
// Errors (InvalidArgument unless the loader's own): "FILE" without an id when the served AR
// models are not exactly one; an id that is not served, or names a diffusion model; two files of
// one kind for one model; a file that is neither kind; and every loader error (a file of another
// model, a malformed one) with the model's id and the file in the message. A file beside a model
// that does not load stops the start too: it is the operator's to fix or remove.
Status LoadDraftFiles(const std::vector<std::string>& named,
                      std::vector<std::unique_ptr<ServedModel>>& models);

// Before the models load (minutes for a large one): each --draft-heads value names a regular
// file, whole or after one of its '='. Errors: InvalidArgument "--draft-heads V: no such file"
// or "... not a regular file" (a directory, a fifo, /dev/null).
Status CheckDraftFilesExist(const std::vector<std::string>& named);

}  // namespace unmask::server

#endif  // UNMASK_TOOLS_SERVER_DRAFT_FILES_H_
