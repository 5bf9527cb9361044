"""The pendulum chain the Featherstone and MuJoCo programs share.

NUM_LINKS box links hanging from the world on revolute joints, as in
newton/examples/basic/example_basic_multi_solver_overlay.py (which runs the same chain with
XPBD, Featherstone, MuJoCo Warp and Kamino), starting horizontal and swinging down.
"""

import newton
import warp as wp

HX, HY, HZ = 1.0, 0.1, 0.1


def chain_builder(num_links, builder=None):
    """A ModelBuilder holding the chain (joints in one articulation) over a ground plane."""
    builder = builder or newton.ModelBuilder()
    links = []
    for _ in range(num_links):
        link = builder.add_link()
        builder.add_shape_box(link, hx=HX, hy=HY, hz=HZ)
        links.append(link)
    rot = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), -wp.pi * 0.5)
    joints = [
        builder.add_joint_revolute(
            parent=-1,
            child=links[0],
            axis=wp.vec3(0.0, 1.0, 0.0),
            parent_xform=wp.transform(p=wp.vec3(0.0, 0.0, 5.0), q=rot),
            child_xform=wp.transform(p=wp.vec3(-HX, 0.0, 0.0), q=wp.quat_identity()),
        )
    ]
    for i in range(1, num_links):
        joints.append(
            builder.add_joint_revolute(
                parent=links[i - 1],
                child=links[i],
                axis=wp.vec3(0.0, 1.0, 0.0),
                parent_xform=wp.transform(p=wp.vec3(HX, 0.0, 0.0), q=wp.quat_identity()),
                child_xform=wp.transform(p=wp.vec3(-HX, 0.0, 0.0), q=wp.quat_identity()),
            )
        )
    builder.add_articulation(joints, label="chain")
    builder.add_ground_plane(height=-3.0)
    return builder
