# The PyPI-wheel builds of ROS interface packages export include directories of
# their build container (/opt/python/cp311-cp311/...). For each dependency's
# Python generator target, drop those and use this interpreter's headers.
# On a normal ROS 2 install nothing matches and this changes nothing.
find_package(Python3 REQUIRED COMPONENTS Interpreter Development NumPy)

function(fix_wheel_include_directories)
  foreach(dep ${ARGN})
    set(target ${dep}::${dep}__rosidl_generator_py)
    if(TARGET ${target})
      get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
      if(dirs)
        list(FILTER dirs EXCLUDE REGEX "^/opt/python/")
        list(APPEND dirs ${Python3_INCLUDE_DIRS} ${Python3_NumPy_INCLUDE_DIRS})
        set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
      endif()
    endif()
  endforeach()
endfunction()
