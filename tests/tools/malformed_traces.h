// Malformed trace programs, one per kind of input error, with the exact
// position and part of the message the parser must give. Shared by the
// parser's tests and the command's (exit code 2, nothing run).
#pragma once

#include <ostream>

namespace streamcheck::tools {

struct Malformed {
  const char* name;
  const char* text;
  int line;
  int col;
  const char* message;
};

// Each case: the trace, and the exact position and part of the message.
inline const Malformed kMalformed[] = {
    {"UnknownStatement", "stream s1\nlanuch K on s1 writes A\n", 2, 1,
     "unknown statement 'lanuch' (did you mean 'launch'?)"},
    {"UnknownStream", "buffer A 64 on s9\n", 1, 16, "unknown stream 's9'"},
    {"UnknownEvent", "stream s1\nrecord e1 on s1\n", 2, 8, "unknown event 'e1'"},
    {"UnknownBuffer", "stream s1\nlaunch K on s1 reads B\n", 2, 22, "unknown buffer 'B'"},
    {"UnknownThread", "stream s1\n@h1 sync stream s1\n", 2, 1, "unknown thread 'h1'"},
    {"DuplicateStream", "stream s1\nstream s1\n", 2, 8, "'s1' is already declared as a stream"},
    {"NameOfAnotherKind", "stream s1\nevent e\nbuffer A 64 on e\n", 3, 16, "'e' is an event, not a stream"},
    {"MissingOn", "stream s1\nbuffer A 64\nlaunch K s1 writes A\n", 3, 10, "expected 'on', found 's1'"},
    {"BadNumber", "stream s1\nbuffer A 6x4 on s1\n", 2, 10, "'6x4' is not a number"},
    {"ZeroBytes", "stream s1\nbuffer A 0 on s1\n", 2, 10, "a buffer needs at least 1 byte"},
    {"ReversedRange", "stream s1\nbuffer A 64 on s1\nlaunch K on s1 reads A[32:16]\n", 3, 23,
     "byte range [32:16] is empty or reversed"},
    {"RangePastEnd", "stream s1\nbuffer A 64 on s1\nlaunch K on s1 reads A[0:128]\n", 3, 23,
     "goes past the end of A (64 bytes)"},
    {"MalformedRange", "stream s1\nbuffer A 64 on s1\nlaunch K on s1 reads A[0-8]\n", 3, 23,
     "a byte range is written [LO:HI]"},
    {"RunWithoutAccesses", "stream s1\nresource\nrun K on s1\n", 3, 12,
     "expected 'reads', 'writes' or 'readwrites' and the blocks used"},
    {"UnknownAccess", "stream s1\nbuffer A 64 on s1\nlaunch K on s1 touches A\n", 3, 16,
     "expected 'reads', 'writes' or 'readwrites', found 'touches'"},
    {"UnknownPoolSwitch", "policy sharing = on\n", 1, 8, "unknown pool switch 'sharing'"},
    {"BadPoolValue", "policy opportunistic = maybe\n", 1, 24, "expected 'on' or 'off', found 'maybe'"},
    {"ResourceTwice", "resource\nresource\n", 2, 1, "'resource' may appear only once"},
    {"AllocateWithoutResource", "stream s1\nallocate X 64 on s1\n", 2, 1,
     "'allocate' needs a 'resource' line before it"},
    {"UnknownMutant", "resource mutant M99\n", 1, 17, "unknown mutant 'M99'"},
    {"TrailingTokens", "stream s1 s2\n", 1, 11, "unexpected 's2' at the end of the statement"},
    {"KeywordAsName", "stream launch\n", 1, 8, "'launch' is a keyword"},
    {"BadPrepareAccess", "stream s1\nresource\nallocate X 64 on s1\nprepare X on s1 modify\n", 4, 17,
     "expected 'read', 'write' or 'read_write'"},
    {"BadSync", "sync everything\n", 1, 6, "expected 'stream', 'event' or 'device' after 'sync'"},
    {"ThreadPrefixAlone", "thread h1\n@h1\n", 2, 4, "expected a statement after '@h1'"},
    {"RecursiveLock", "mutex M\nthread t\n@t lock M\n@t lock M\n", 4, 9,
     "thread t already holds mutex M (locked at line 3): mutexes are not recursive"},
    {"UnlockNotHeld", "mutex M\nthread t\nlock M\n@t unlock M\nunlock M\n", 4, 11, "thread t does not hold mutex M"},
    {"ThreadEndsHoldingMutex", "mutex M\nstream s\nlock M\nsync stream s\n", 3, 6,
     "thread main ends holding mutex M (locked here): unlock it"},
    {"SpawnTwice", "thread t\nspawn t\nspawn t\n", 3, 7, "thread t is already spawned at line 2"},
    {"SpawnMain", "stream s\nspawn main\n", 2, 7, "main cannot be spawned"},
    {"JoinItself", "thread t\n@t join t\n", 2, 9, "thread t cannot join itself"},
    {"LockAChannel", "channel C\nlock C\n", 2, 6, "'C' is a channel, not a mutex"},
    {"ReceiveUnknownChannel", "stream s\nreceive C\n", 2, 9, "unknown channel 'C' (declare it with 'channel C')"},
    {"BadName", "stream 1s\n", 1, 8, "'1s' is not a valid name"},
    // R9: lifetimes.
    {"DestroyABuffer", "buffer A 64\ndestroy buffer A\n", 2, 9,
     "expected 'stream' or 'event' after 'destroy', found 'buffer'"},
    {"DestroyTheLegacyStream", "stream s\ndestroy stream legacy\n", 2, 16,
     "the legacy default stream cannot be destroyed"},
    {"DestroyAnUnknownStream", "stream s\ndestroy stream t\n", 2, 16, "unknown stream 't'"},
    {"DestroyAStreamAsAnEvent", "stream s\ndestroy event s\n", 2, 15, "'s' is a stream, not an event"},
    {"DestroyWithoutAName", "stream s\ndestroy stream\n", 2, 15, "expected a stream at the end of the line"},
    {"StreamDeclaredAgainWithoutDestroy", "stream s\nstream s\nsync device\n", 2, 8,
     "'s' is already declared as a stream (destroy stream s first to make a new one)"},
    {"EventDeclaredAgainAfterAStreamDestroy", "stream E\ndestroy stream E\nevent E\n", 3, 7,
     "'E' is already declared as a stream"},
    {"DestroyAPerThreadStream", "stream s\ndestroy stream per_thread\n", 2, 16,
     "a per-thread default stream cannot be destroyed"},
    {"PerThreadDeclared", "stream per_thread\n", 1, 8,
     "'per_thread' is the per-thread default stream of the thread that names it"},
    // R8: the legacy default stream and the main thread are every trace's.
    {"LegacyDeclared", "stream s\nstream legacy\n", 2, 8,
     "'legacy' is the legacy default stream (stream 0), which every trace has: use it as it is"},
    {"LegacyAsABuffer", "buffer legacy 64\n", 1, 8, "'legacy' is the legacy default stream"},
    {"MainAsAStream", "stream main\n", 1, 8, "'main' is the host thread the trace starts on, which every trace has"},
    {"MainAsAnEvent", "event main\n", 1, 7, "'main' is the host thread the trace starts on"},
    {"LegacyUsedAsAnEvent", "stream s\nrecord legacy on s\n", 2, 8, "'legacy' is a stream, not an event"},
    {"NonBlockingTwice", "stream s nonblocking nonblocking\n", 1, 22,
     "unexpected 'nonblocking' at the end of the statement"},
    {"BlockingIsNotAWord", "stream s blocking\n", 1, 10, "unexpected 'blocking' at the end of the statement"},
    {"NonBlockingAsName", "stream nonblocking\n", 1, 8, "'nonblocking' is a keyword"},
    {"NonBlockingOnAnEvent", "event e nonblocking\n", 1, 9, "unexpected 'nonblocking' at the end of the statement"},
    // S1: sizes near 2^64 used to wrap to a 256-byte allocation (a real race reported clean).
    {"BufferOfAlmost2To64Bytes",
     "stream s0\nstream s1\nbuffer A 0xffffffffffffff01 on s0\nlaunch K1 on s0 writes A\nlaunch K2 on s1 reads A\n", 3,
     10, "a buffer of '0xffffffffffffff01' bytes is too large: the largest accepted size is 281474976710656 bytes"},
    {"BufferOf2To64Minus1Bytes", "buffer A 18446744073709551615\n", 1, 10,
     "the largest accepted size is 281474976710656 bytes (2^48, 256 TiB)"},
    {"BufferJustOverTheLargestSize", "buffer A 0x1000000000001\n", 1, 10, "the largest accepted size"},
    {"BufferSizeOverflowsThroughItsSuffix", "buffer A 0xffffffffffffM\n", 1, 10, "the largest accepted size"},
    {"AllocateOf2To64Minus1Bytes", "stream s0\nresource\nallocate X 0xffffffffffffffff on s0\n", 3, 12,
     "the largest accepted size"},
    {"NumberBeyond2To64", "stream s0\nbuffer A 64 on s0\nlaunch K on s0 reads A[0:18446744073709551616]\n", 3, 26,
     "number '18446744073709551616' is too large"},
    {"HexWithoutDigits", "buffer A 0x\n", 1, 10, "'0x' is not a number"},
    // S4: what docs/TRACES.md forbids.
    {"FreeOfAnAllocatedBlock", "stream s0\nresource\nallocate X 64 on s0\nfree X on s0\n", 4, 6,
     "'X' was made by 'allocate' (line 3): give it back with 'deallocate X'"},
    {"PlainFreeOfAnAllocatedBlock", "stream s0\nresource\nallocate X 64 on s0\nfree X\n", 4, 6,
     "'X' was made by 'allocate' (line 3)"},
    {"CopyBetweenBuffersOfDifferentSizes",
     "stream s0\nbuffer A 64 on s0\nbuffer B 128 on s0\ncopy C on s0 from A to B\n", 4, 24,
     "copy C reads 64 bytes (A[0:64]) but writes 128 bytes (B[0:128])"},
    {"CopyBetweenRangesOfDifferentSizes",
     "stream s0\nbuffer A 64 on s0\nbuffer B 64 on s0\ncopy C on s0 from A[0:32] to B[0:16]\n", 4, 30,
     "copy C reads 32 bytes (A[0:32]) but writes 16 bytes (B[0:16])"},
    {"CopyBetweenOverlappingBytes", "stream s0\nbuffer A 64 on s0\ncopy C on s0 from A[0:32] to A[16:48]\n", 3, 30,
     "the source A[0:32] and the destination A[16:48] overlap"},
    {"CopyOfABufferOntoItself", "stream s0\nbuffer A 64 on s0\ncopy C on s0 from A to A\n", 3, 24, "overlap"},
    {"PolicyAfterAStatementThatRuns", "stream s0\nbuffer A 64 on s0\npolicy opportunistic = off\n", 3, 1,
     "'policy' must come before the first statement that runs (line 2)"},
    {"ThreadPrefixNamesAStream", "stream s1\n@s1 sync device\n", 2, 1, "'s1' is a stream, not a thread"},
    {"KeywordWhereABufferGoes", "stream s0\nbuffer A 64 on s0\nbuffer B 64 on s0\nlaunch K on s0 reads A, writes B\n",
     4, 25, "expected a buffer, found the keyword 'writes'"},
    // S7: what a message echoes of the input is escaped and cut.
    {"ControlByteInAName", "stream s\x01x\n", 1, 8, "'s\\x01x' is not a valid name"},
    {"MalformedUtf8InAStatement", "lanuch\xff on s0\n", 1, 1, "unknown statement 'lanuch\\xFF'"},
    {"NameTooLong",
     "stream s12345678901234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234"
     "56789012345678901234567890\n",
     1, 8, "is too long (names have at most 128 characters)"},
};

inline void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

}  // namespace streamcheck::tools
