# MPI (Open MPI from Debian: libopenmpi-dev + openmpi-bin, installed by scripts/setup.sh) carries
# multi-rank runs. -DMLPO_MPI=OFF builds without it: single-process runs only, and the MPI tests
# skip with that reason. NCCL, the GPU collectives, is cmake/MlpoNccl.cmake's.
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
