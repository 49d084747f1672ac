"""inertia_estimation_ros: payload estimation for robot teams that carry one payload.

Layout: ``core`` holds the ROS-free math, ``sim`` the MuJoCo simulation, ``ros``
the message conversions and nodes. The generated message modules
(``inertia_estimation_ros.msg``) are installed by CMake next to the installed
package; extending ``__path__`` lets a source checkout import them as well.
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
__version__ = "0.1.0"
