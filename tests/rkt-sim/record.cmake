# Writes the build record (src/rkt/build.h) beside the simulator, as scripts/build-rkt writes
# one beside rkt: the simulator stands for rkt 1.30.0 with rktlet's patches (it has no
# stage1 image, so no stage1 line). Run after each link:
#   cmake -DBIN=<rkt-sim> -DPATCH_DIR=<packaging/rkt> -P record.cmake
file(SHA256 ${BIN} bin_sum)
file(GLOB patches ${PATCH_DIR}/*.patch)
list(SORT patches)
set(text "# rkt-sim, a test double of rkt 1.30.0 with rktlet's patches (tests/rkt-sim/).\n")
string(APPEND text "rkt 1.30.0 ${bin_sum}\n")
foreach(patch IN LISTS patches)
  file(SHA256 ${patch} sum)
  get_filename_component(name ${patch} NAME)
  string(APPEND text "patch ${sum} ${name}\n")
endforeach()
file(WRITE ${BIN}.patches "${text}")
