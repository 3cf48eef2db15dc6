// jemalloc's options for the streamcheck command (STREAMCHECK_JEMALLOC):
// read by jemalloc at its first allocation, before main. A long check keeps
// hundreds of megabytes of small records (ops, findings, their texts), and
// with 4 KiB pages a fault per page was a fifth to a third of its time on a
// virtual machine; transparent huge pages (where the kernel offers them for
// madvise, as Debian's default does) take a fault per 2 MiB. A MALLOC_CONF
// in the environment still adds to or overrides these (jemalloc reads it
// after this). docs/PERFORMANCE.md, "Huge pages for the command's memory".
extern "C" {
// The name jemalloc reads; its own definition is weak.
extern const char* const malloc_conf;
const char* const malloc_conf = "thp:always,metadata_thp:auto";
}
