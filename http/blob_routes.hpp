#pragma once
// The local backend's transfers (docs/storage.md): the bytes of a blob streamed through batond.
//   PUT /blobs/uploads/{upload_id}?offset=N   the body from byte N to the end (Content-Length)
//   GET /blobs/uploads/{upload_id}            {"offset": bytes held, "size"}
//   GET /blobs/downloads/{grant}              the blob, or one Range of it
// Each is served only to the caller its grant was made for (the grants come from the JSON
// routes, through storage::backend). Shell only: who may have which blob is decided before
// a grant exists; these routes check the credential against the grant and move bytes.
#include <memory>

#include "http/api_routes.hpp"
#include "http/router.hpp"
#include "http/storage/local_backend.hpp"

namespace baton::http {

void add_blob_routes(router& server, const api_context& ctx, std::shared_ptr<storage::local_backend> blobs);

}  // namespace baton::http
