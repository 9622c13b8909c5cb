import { decoderFor, encoderFor } from "../codec.js";
import { ScheduleEvent } from "./schedule-schemas.js";

export const decodeScheduleEvent = decoderFor(ScheduleEvent);
export const encodeScheduleEvent = encoderFor(ScheduleEvent);
