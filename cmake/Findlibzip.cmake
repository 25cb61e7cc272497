# Findlibzip: libzip's library and headers as the imported target libzip::zip (GLOBAL: src/npy
# writes .npz archives with it, tests/npy reads them back). Sets libzip_FOUND and libzip_VERSION.
#
# Used instead of libzip's own CMake package, which Debian's libzip-dev installs broken (bookworm,
# 1.7.3): its libzip-targets.cmake also imports the programs zipcmp, zipmerge and ziptool, which are
# separate Debian packages, and stops configure with a fatal error where they are not installed
# (the error yuzu-emu/yuzu#6031 reports), whatever QUIET says.
find_path(libzip_INCLUDE_DIR zip.h)
find_path(libzip_CONFIG_INCLUDE_DIR zipconf.h PATH_SUFFIXES libzip/include)  # older libzip: lib/libzip/include
find_library(libzip_LIBRARY zip)
mark_as_advanced(libzip_INCLUDE_DIR libzip_CONFIG_INCLUDE_DIR libzip_LIBRARY)
if(libzip_CONFIG_INCLUDE_DIR)
  file(STRINGS "${libzip_CONFIG_INCLUDE_DIR}/zipconf.h" libzip_version_line REGEX "^#define LIBZIP_VERSION \"")
  string(REGEX REPLACE "^#define LIBZIP_VERSION \"([^\"]*)\".*" "\\1" libzip_VERSION "${libzip_version_line}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(libzip REQUIRED_VARS libzip_LIBRARY libzip_INCLUDE_DIR libzip_CONFIG_INCLUDE_DIR
                                  VERSION_VAR libzip_VERSION)
if(libzip_FOUND AND NOT TARGET libzip::zip)
  add_library(libzip::zip UNKNOWN IMPORTED GLOBAL)
  set_target_properties(libzip::zip PROPERTIES IMPORTED_LOCATION "${libzip_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${libzip_INCLUDE_DIR};${libzip_CONFIG_INCLUDE_DIR}")
endif()
