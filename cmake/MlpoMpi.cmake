# MPI (Open MPI from Debian: libopenmpi-dev + openmpi-bin, installed by scripts/setup.sh) carries
# multi-rank runs. -DMLPO_MPI=OFF builds without it: single-process runs only, and the MPI tests
# skip with that reason. NCCL (GPU collectives) is looked for next to the CUDA toolkit; without
# it the NCCL communicator is not built and a status line says so.
option(MLPO_MPI "Build the MPI communicator (multi-rank runs); needs libopenmpi-dev" ON)
set(MLPO_HAVE_MPI OFF)
if(MLPO_MPI)
  find_package(MPI COMPONENTS C)
  if(NOT MPI_C_FOUND)
    message(FATAL_ERROR "MLPO: MPI not found. Install Open MPI with scripts/setup.sh "
                        "(libopenmpi-dev openmpi-bin), or configure with -DMLPO_MPI=OFF for single-process builds.")
  endif()
  set(MLPO_HAVE_MPI ON)
  message(STATUS "MLPO: MPI communicator enabled (${MPI_C_LIBRARIES}; launcher ${MPIEXEC_EXECUTABLE})")
else()
  message(STATUS "MLPO: MPI communicator disabled by -DMLPO_MPI=OFF (single-process runs only)")
endif()

set(MLPO_HAVE_NCCL OFF)
if(MLPO_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(MLPO_HAVE_NCCL ON)
    message(STATUS "MLPO: NCCL communicator enabled (${NCCL_LIBRARY})")
  else()
    message(STATUS "MLPO: NCCL not found (nccl.h / libnccl next to the CUDA toolkit); the NCCL communicator is not built")
  endif()
else()
  message(STATUS "MLPO: no CUDA, so no NCCL communicator")
endif()
