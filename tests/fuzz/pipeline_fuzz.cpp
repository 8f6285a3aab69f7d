// Fuzzes aggregation pipelines (command/exec/pipeline.h): the input's first field, when an array,
// is a pipeline run after {$documents: <the sample documents>} in a collectionless aggregate on a
// scratch storage engine. Any pipeline builds or fails with a status; a built one returns each of
// its results (at most 500) as valid BSON or stops with a status.
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "command/command.h"
#include "command/exec/pipeline.h"
#include "fuzz_util.h"
#include "storage/engine.h"

using namespace tessera;

namespace {

storage::Engine& scratchEngine() {
    static std::unique_ptr<storage::Engine> engine = [] {
        std::string dir = (std::filesystem::temp_directory_path() /
                           ("tessera-pipeline-fuzz-" + std::to_string(::getpid())))
                              .string();
        std::filesystem::remove_all(dir);
        storage::EngineOptions options;
        options.dbpath = dir;
        options.blockCacheBytes = size_t{8} << 20;
        auto opened = storage::Engine::open(options);
        fuzz::check(opened.isOK());
        return std::move(opened.getValue());
    }();
    return *engine;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::optional<bson::BsonView> input = fuzz::inputDocument(data, size);
    if (!input || input->isEmpty() || !input->firstElement().isArray()) return 0;
    if (fuzz::hasLargeRange(*input)) return 0;
    bson::BsonArrayBuilder stages;
    {
        bson::BsonArrayBuilder docs;
        for (const bson::BsonObj& d : fuzz::sampleDocuments()) docs.append(d);
        bson::BsonBuilder first;
        first.appendArray("$documents", docs.arr());
        stages.append(first.obj());
    }
    for (const bson::BsonElement& s : input->firstElement().objValue()) stages.appendElement(s);
    bson::BsonObj pipeline = stages.arr();
    command::exec::PipelineContext pctx(&scratchEngine(), "127.0.0.1:1");
    auto executor = command::exec::buildPipelineExecutor(pctx, nullptr, nullptr,
                                                         "fuzz.$cmd.aggregate", pipeline);
    if (!executor.isOK()) return 0;
    command::OperationContext opCtx;
    for (int i = 0; i < 500; ++i) {
        auto next = executor.getValue()->nextDoc(opCtx);
        if (!next.isOK() || !next.getValue()) break;
        fuzz::checkValid(*next.getValue());
    }
    return 0;
}
