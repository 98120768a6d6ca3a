#pragma once
// Checks on the files a command is given, made before anything is read or written, so a bad
// path is one line naming the flag or file and the fix — never a hang, and never an error
// after the work is done. A FIFO, socket or device named as an input would block or never
// end (reading it is refused before it is opened); a directory named as an output would fail
// only at the final rename.

#include <string>

namespace mlpo {

// `path` is an existing regular file (or a link to one). Throws mlpo::Error "<path>: is a
// directory|a FIFO|...; expected <what>" otherwise, or "<path>: cannot open (<errno text>)"
// when it cannot be looked up.
void check_input_file(const std::string& path, const std::string& what);

// `path` can be created or replaced as a regular file: it is not an existing directory or
// special file, and its directory exists and is writable. Errors name `flag` (e.g. "--out").
void check_output_file(const std::string& path, const std::string& flag);

}  // namespace mlpo
