# Every third-party piece is a Debian package (scripts/setup.sh installs them).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 2.1 REQUIRED)
pkg_check_modules(LIBURING REQUIRED IMPORTED_TARGET liburing)
# CRC32C of buffers under 1 MiB (libisal-dev, Intel ISA-L: executor/io/crc32c.hpp).
pkg_check_modules(ISAL REQUIRED IMPORTED_TARGET libisal)
pkg_check_modules(SIMGRID REQUIRED IMPORTED_TARGET simgrid>=3.32)
# Tokenizers (libsentencepiece-dev): the processor for prepare-data, the trainer for the tests.
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
if(MLPO_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
