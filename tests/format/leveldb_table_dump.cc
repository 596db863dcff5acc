// tests/format/leveldb_table_dump.cc - an independent checker for our
// SSTables: LevelDB's own table code (Debian's libleveldb).
//
//   leveldb_table_dump FILE
//       Open FILE with leveldb::Table::Open (paranoid checks, checksums
//       verified on every block) and print each entry as
//       "<hex key> <hex value>\n" (an empty key or value prints as "-").
//   leveldb_table_dump --build FILE
//       Read such lines from stdin and write FILE with leveldb::TableBuilder
//       using TensorFlow's settings (block size 262144, restart interval 16,
//       no compression).
// Exit status 1 on any error, with the message on stderr.
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/table.h>
#include <leveldb/table_builder.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

namespace
{

std::string to_hex(const leveldb::Slice &s)
{
    static const char digits[] = "0123456789abcdef";
    if (s.empty())
        return "-";
    std::string out;
    out.reserve(2 * s.size());
    for (size_t i = 0; i < s.size(); i++) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out;
}

bool from_hex(const std::string &h, std::string *out)
{
    out->clear();
    if (h == "-")
        return true;
    if (h.size() % 2)
        return false;
    for (size_t i = 0; i < h.size(); i += 2) {
        int v = 0;
        for (size_t k = i; k < i + 2; k++) {
            char c = h[k];
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                             : -1;
            if (d < 0)
                return false;
            v = v * 16 + d;
        }
        out->push_back(static_cast<char>(v));
    }
    return true;
}

int fail(const std::string &what, const leveldb::Status &s)
{
    std::fprintf(stderr, "leveldb_table_dump: %s: %s\n", what.c_str(),
                 s.ToString().c_str());
    return 1;
}

int dump(const std::string &path)
{
    leveldb::Env *env = leveldb::Env::Default();
    uint64_t size = 0;
    leveldb::Status s = env->GetFileSize(path, &size);
    if (!s.ok())
        return fail(path, s);
    leveldb::RandomAccessFile *raw_file = nullptr;
    s = env->NewRandomAccessFile(path, &raw_file);
    if (!s.ok())
        return fail(path, s);
    std::unique_ptr<leveldb::RandomAccessFile> file(raw_file);

    leveldb::Options options;
    options.paranoid_checks = true;
    leveldb::Table *raw_table = nullptr;
    s = leveldb::Table::Open(options, file.get(), size, &raw_table);
    if (!s.ok())
        return fail(path, s);
    std::unique_ptr<leveldb::Table> table(raw_table);

    leveldb::ReadOptions read_options;
    read_options.verify_checksums = true;
    read_options.fill_cache = false;
    std::unique_ptr<leveldb::Iterator> it(table->NewIterator(read_options));
    for (it->SeekToFirst(); it->Valid(); it->Next())
        std::printf("%s %s\n", to_hex(it->key()).c_str(),
                    to_hex(it->value()).c_str());
    if (!it->status().ok())
        return fail(path, it->status());
    return std::fflush(stdout) == 0 ? 0 : 1;
}

int build(const std::string &path)
{
    leveldb::Env *env = leveldb::Env::Default();
    leveldb::WritableFile *raw_file = nullptr;
    leveldb::Status s = env->NewWritableFile(path, &raw_file);
    if (!s.ok())
        return fail(path, s);
    std::unique_ptr<leveldb::WritableFile> file(raw_file);

    leveldb::Options options;
    options.block_size = 262144;
    options.block_restart_interval = 16;
    options.compression = leveldb::kNoCompression;
    leveldb::TableBuilder builder(options, file.get());
    std::string hk, hv, key, value;
    while (std::cin >> hk >> hv) {
        if (!from_hex(hk, &key) || !from_hex(hv, &value)) {
            builder.Abandon();
            std::fprintf(stderr, "leveldb_table_dump: bad input line\n");
            return 1;
        }
        builder.Add(key, value);
    }
    s = builder.Finish();
    if (s.ok())
        s = file->Close();
    if (!s.ok())
        return fail(path, s);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc == 2)
        return dump(argv[1]);
    if (argc == 3 && std::string(argv[1]) == "--build")
        return build(argv[2]);
    std::fprintf(stderr, "usage: leveldb_table_dump [--build] FILE\n");
    return 2;
}
