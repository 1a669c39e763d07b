// The hub client's pure parts: catalogue parsing, hub answers, file selection, path safety,
// checksums, the cache layout. The network half is tests/hub/test_pull.py (a local HTTPS hub).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "hub/catalog.h"
#include "hub/digest.h"
#include "hub/hub_api.h"
#include "hub/hub_cache.h"
#include "hub/pull.h"
#include "hub/resolve.h"

namespace unmask::hub {
namespace {

TEST(HubDigest, KnownVectors) {
  EXPECT_EQ(HexDigest(DigestKind::kSha256, "abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // git hash-object of an empty file, and of "hello\n".
  EXPECT_EQ(HexDigest(DigestKind::kGitBlobSha1, ""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(HexDigest(DigestKind::kGitBlobSha1, "hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(HubCatalog, BuiltinParsesAndNamesOnlyRealFlags) {
  StatusOr<Catalog> c = ParseCatalog(kBuiltinCatalogJson, "built-in");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_GE(c->models.size(), 10u);
  ASSERT_NE(c->Find("llada:8b-instruct"), nullptr);
  EXPECT_EQ(c->Find("llada:8b-instruct")->repo, "GSAI-ML/LLaDA-8B-Instruct");
  EXPECT_EQ(c->FindRepo("jetlm/sdar-4b-chat"), c->Find("sdar:4b-chat"));
  EXPECT_EQ(c->Find("sdar:4b-chat")->DefaultsAsFlags().rfind("--block-length 4", 0), 0u);
}

TEST(HubCatalog, RefusesBadEntries) {
  const char* bad[] = {
      "not json",
      R"({"catalog_version": 2, "models": []})",
      R"({"catalog_version": 1})",
      R"({"catalog_version": 1, "models": [{"name": "NoColon", "repo": "a/b"}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "../b"}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b", "revision": "x y"}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b",
          "files": [{"path": "../x"}]}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b",
          "files": [{"path": "x", "sha256": "12"}]}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b",
          "defaults": {"--x": 1}}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b",
          "defaults": {"x": [1]}}]})",
      R"({"catalog_version": 1, "models": [{"name": "a:b", "repo": "a/b"},
                                            {"name": "a:b", "repo": "c/d"}]})",
  };
  for (const char* text : bad) {
    StatusOr<Catalog> c = ParseCatalog(text, "t.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("t.json"), std::string::npos) << c.status().message();
  }
}

TEST(HubPaths, RepoIdsRevisionsAndFilePaths) {
  EXPECT_TRUE(IsValidRepoId("GSAI-ML/LLaDA-8B-Instruct"));
  EXPECT_TRUE(IsValidRepoId("inclusionAI/LLaDA2.0-mini"));
  for (const char* bad :
       {"a", "a/b/c", "/a", "a/", "a/.b", "a/b-", "a--b/c", "a/b..c", "a/b c", "a/b\\c"}) {
    EXPECT_FALSE(IsValidRepoId(bad)) << bad;
  }
  EXPECT_TRUE(IsValidRevision("main"));
  EXPECT_TRUE(IsValidRevision("refs/pr/3"));
  for (const char* bad : {"", "/main", "a..b", "a b", "a?b", "a%2e"}) {
    EXPECT_FALSE(IsValidRevision(bad)) << bad;
  }
  EXPECT_TRUE(IsSafeRepoPath("config.json"));
  EXPECT_TRUE(IsSafeRepoPath("onnx/model.onnx"));
  for (const char* bad :
       {"", "/etc/passwd", "../x", "a/../b", "a//b", "a/", "./a", "a\\b", "a\nb"}) {
    EXPECT_FALSE(IsSafeRepoPath(bad)) << bad;
  }
}

constexpr const char* kInfo = R"({"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
  {"rfilename": ".gitattributes", "size": 10, "blobId": "1111111111111111111111111111111111111111"},
  {"rfilename": "config.json", "size": 20, "blobId": "2222222222222222222222222222222222222222"},
  {"rfilename": "model.safetensors", "size": 99, "blobId": "3333333333333333333333333333333333333333",
   "lfs": {"sha256": "4444444444444444444444444444444444444444444444444444444444444444", "size": 1000}},
  {"rfilename": "pytorch_model.bin", "size": 99, "blobId": "5555555555555555555555555555555555555555",
   "lfs": {"sha256": "6666666666666666666666666666666666666666666666666666666666666666", "size": 900}}]})";

TEST(HubApi, ParsesRepoInfoAndSelectsSafetensors) {
  StatusOr<RepoInfo> info = ParseRepoInfo(kInfo, "a/b");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->commit, "0123456789abcdef0123456789abcdef01234567");
  ASSERT_EQ(info->files.size(), 4u);
  EXPECT_TRUE(info->files[2].lfs);
  EXPECT_EQ(info->files[2].size, 1000u);  // the LFS size, not the pointer's
  StatusOr<std::vector<RepoFile>> sel = SelectFiles(*info, {}, {}, "");
  ASSERT_TRUE(sel.ok());
  ASSERT_EQ(sel->size(), 2u);  // config.json and model.safetensors
  EXPECT_EQ((*sel)[0].path, "config.json");
  EXPECT_EQ((*sel)[1].path, "model.safetensors");
  sel = SelectFiles(*info, {"*.json"}, {}, "");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->size(), 1u);
  EXPECT_FALSE(SelectFiles(*info, {"*.nothing"}, {}, "").ok());
  EXPECT_FALSE(SelectFiles(*info, {}, {"*"}, "").ok());
}

TEST(HubApi, RefusesHostileOrUnverifiableAnswers) {
  const char* bad[] = {
      "[]",
      R"({"sha": "short", "siblings": []})",
      R"({"sha": "0123456789abcdef0123456789abcdef01234567"})",
      R"({"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
          {"rfilename": "../../etc/x", "size": 1, "blobId": "1111111111111111111111111111111111111111"}]})",
      R"({"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
          {"rfilename": "a", "size": 1}]})",
      R"({"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
          {"rfilename": "a", "size": 1, "blobId": "1111111111111111111111111111111111111111",
           "lfs": {"sha256": "zz", "size": 1}}]})",
      R"({"sha": "0123456789abcdef0123456789abcdef01234567", "siblings": [
          {"rfilename": "a", "size": 1, "blobId": "1111111111111111111111111111111111111111"},
          {"rfilename": "a", "size": 1, "blobId": "1111111111111111111111111111111111111111"}]})",
  };
  for (const char* text : bad) {
    StatusOr<RepoInfo> info = ParseRepoInfo(text, "a/b");
    ASSERT_FALSE(info.ok()) << text;
    EXPECT_EQ(info.status().code(), StatusCode::kDataLoss);
  }
}

RepoInfo GgufRepo() {
  RepoInfo info;
  info.repo = "org/m-GGUF";
  info.commit = std::string(40, 'a');
  for (const char* p :
       {"README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "m-f16.gguf", "mmproj-f16.gguf"}) {
    info.files.push_back({p, 1, false, std::string(40, 'b')});
  }
  return info;
}

TEST(HubApi, GgufQuantizations) {
  EXPECT_EQ(GgufQuantName("SmolLM2-135M-Instruct-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(GgufQuantName("llama.Q8_0.gguf"), "Q8_0");
  EXPECT_EQ(GgufQuantName("m-Q4_K_M-00001-of-00003.gguf"), "Q4_K_M");
  EXPECT_EQ(GgufQuantName("m-bf16.gguf"), "BF16");
  EXPECT_EQ(GgufQuantName("model.gguf"), "");
  StatusOr<std::vector<RepoFile>> sel = SelectFiles(GgufRepo(), {}, {}, "q8_0");
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  ASSERT_EQ(sel->size(), 2u);  // README.md and the Q8_0 file; never the projector
  EXPECT_EQ((*sel)[1].path, "m-Q8_0.gguf");
  sel = SelectFiles(GgufRepo(), {}, {}, "");  // llama.cpp's default pick
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ((*sel)[1].path, "m-Q4_K_M.gguf");
  StatusOr<std::vector<RepoFile>> none = SelectFiles(GgufRepo(), {}, {}, "Q2_K");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("Q8_0"), std::string::npos);
}

TEST(HubReference, NamesIdsAndQuantizations) {
  StatusOr<Catalog> c = ParseCatalog(kBuiltinCatalogJson, "built-in");
  ASSERT_TRUE(c.ok());
  StatusOr<ModelReference> r = ParseModelReference("sdar:4b-chat", *c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo, "JetLM/SDAR-4B-Chat");
  r = ParseModelReference("hf.co/org/m-GGUF:Q4_K_M", *c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo, "org/m-GGUF");
  EXPECT_EQ(r->quant, "Q4_K_M");
  r = ParseModelReference("https://huggingface.co/GSAI-ML/LLaDA-8B-Instruct", *c);
  ASSERT_TRUE(r.ok());
  ASSERT_NE(r->entry, nullptr);  // the catalogue's entry of that repo
  EXPECT_EQ(r->entry->name, "llada:8b-instruct");
  r = ParseModelReference("sdar:4b-chta", *c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseModelReference("org/m:", *c).ok());
  // A mistyped file is a missing file, not a repository to pull.
  EXPECT_TRUE(LooksLikeModelReference("org/m", *c));
  EXPECT_FALSE(LooksLikeModelReference("models/m.gguf", *c));
  EXPECT_FALSE(LooksLikeModelReference("./m", *c));
}

TEST(HubCache, LayoutListFindAndRemove) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("unmask-hub-cache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  EXPECT_TRUE(ListCache(dir.string()).empty());  // a missing cache is empty
  EXPECT_EQ(RepoFolderName("org/name"), "models--org--name");
  EXPECT_EQ(RepoFromFolderName("models--org--name").value_or(""), "org/name");
  EXPECT_FALSE(RepoFromFolderName("datasets--org--name").has_value());
  const std::string commit(40, 'c');
  const fs::path repo = dir / "models--org--name";
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "snapshots" / commit);
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "blobs" / "e1") << "{\"a\": 1}";
  fs::create_symlink("../../blobs/e1", repo / "snapshots" / commit / "config.json");
  std::ofstream(repo / "refs" / "main") << commit;
  const std::vector<CachedRepo> repos = ListCache(dir.string());
  ASSERT_EQ(repos.size(), 1u);
  EXPECT_EQ(repos[0].repo, "org/name");
  ASSERT_EQ(repos[0].snapshots.size(), 1u);
  EXPECT_TRUE(repos[0].snapshots[0].complete);
  EXPECT_EQ(repos[0].snapshots[0].size_bytes, 8u);
  EXPECT_TRUE(FindSnapshot(repos[0], "main").has_value());
  EXPECT_TRUE(FindSnapshot(repos[0], "ccccccc").has_value());
  EXPECT_FALSE(FindSnapshot(repos[0], "v2").has_value());
  // -m org/name resolves to the snapshot; a path that exists is itself.
  StatusOr<Catalog> c = ParseCatalog(R"({"catalog_version": 1, "models": []})", "t");
  ASSERT_TRUE(c.ok());
  StatusOr<ResolvedModel> m = ResolveModel("org/name", *c, dir.string());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->path, (repo / "snapshots" / commit).string());
  EXPECT_EQ(ResolveModel(dir.string(), *c, dir.string())->path, dir.string());
  StatusOr<ResolvedModel> missing = ResolveModel("org/other", *c, dir.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("unmask pull org/other"), std::string::npos);
  // A snapshot whose blob is gone is not complete.
  fs::remove(repo / "blobs" / "e1");
  EXPECT_FALSE(FindSnapshot(ListCache(dir.string())[0], "main").has_value());
  StatusOr<uint64_t> freed = RemoveCachedRepo(dir.string(), "org/name");
  ASSERT_TRUE(freed.ok());
  EXPECT_FALSE(fs::exists(repo));
  EXPECT_EQ(RemoveCachedRepo(dir.string(), "org/name").status().code(), StatusCode::kNotFound);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace unmask::hub
