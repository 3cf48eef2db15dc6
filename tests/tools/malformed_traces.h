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
    {"MissingAccesses", "stream s1\nlaunch K on s1\n", 2, 15, "expected 'reads', 'writes' or 'readwrites'"},
    {"UnknownAccess", "stream s1\nbuffer A 64 on s1\nlaunch K on s1 touches A\n", 3, 16,
     "expected 'reads', 'writes' or 'readwrites', found 'touches'"},
    {"UnknownPoolSwitch", "policy sharing = on\n", 1, 8, "unknown pool switch 'sharing'"},
    {"BadPoolValue", "policy opportunistic = maybe\n", 1, 24, "expected 'on' or 'off', found 'maybe'"},
    {"ResourceTwice", "resource\nresource\n", 2, 1, "'resource' may appear only once"},
    {"AllocateWithoutResource", "stream s1\nallocate X 64 on s1\n", 2, 1,
     "'allocate' needs a 'resource' line before it"},
    {"UnknownMutant", "resource mutant M12\n", 1, 17, "unknown mutant 'M12'"},
    {"TrailingTokens", "stream s1 s2\n", 1, 11, "unexpected 's2' at the end of the statement"},
    {"KeywordAsName", "stream launch\n", 1, 8, "'launch' is a keyword"},
    {"BadPrepareAccess", "stream s1\nresource\nallocate X 64 on s1\nprepare X on s1 modify\n", 4, 17,
     "expected 'read', 'write' or 'read_write'"},
    {"BadSync", "sync everything\n", 1, 6, "expected 'stream', 'event' or 'device' after 'sync'"},
    {"ThreadPrefixAlone", "thread h1\n@h1\n", 2, 4, "expected a statement after '@h1'"},
    {"BadName", "stream 1s\n", 1, 8, "'1s' is not a valid name"},
};

inline void PrintTo(const Malformed& m, std::ostream* os) { *os << m.name; }

}  // namespace streamcheck::tools
